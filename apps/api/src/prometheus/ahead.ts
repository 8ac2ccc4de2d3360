import { cancelQueryPart, readSamples, type ConnOptions, type SeriesSamples } from '@meridian/clickhouse';
import { canRead, METRIC_NAME, planWindows, querySelectors, seriesName, type Expr, type SampleWindow, type UserRecord } from '@meridian/domain';

/** A query's times, as runQuery takes them. */
type Times = { readonly startMs: number; readonly endMs: number; readonly stepMs: number };

/**
 * A query of one series read while the catalog is read, not after it: the samples of the one
 * series its selector's equality matchers name (`x`, `x{job="a"}`), started before the catalog
 * says which series the caller may read. A query otherwise waits for two ClickHouse round trips
 * one after the other; this way the second overlaps the first (a dashboard's single series is
 * mostly those fixed costs).
 *
 * The read ahead is used only when the plan, made as before from the catalog filtered by the
 * caller's entitlements, reads exactly that series over exactly the times read, unreduced: so it
 * answers only what the read after the catalog would have, with the same bound on samples.
 * Otherwise (the series is not readable or does not exist, other series match, the plan reduces
 * the function) it is stopped (the socket closed and its query killed) and never awaited. A name
 * the caller may not read is never read ahead at all: its samples would cost the server, and the
 * event loop the catalog's answer shares, work that a name that does not exist does not (a
 * difference in time a caller could measure).
 */
export type ReadAhead = {
  /** The read ahead when it is this window's read within this budget of samples; null otherwise. A read is taken once. */
  take(window: SampleWindow, maxSamples: number): Promise<SeriesSamples[] | 'too_many'> | null;
  /** Stops the read ahead unless it was taken; idempotent. */
  drop(): void;
};

/** The query id suffix of the read ahead (killed alone by it). */
const PART = 'ahead';

/** The canonical name of the one series a query's selector names with equality matchers only, and that selector's window; null otherwise. */
function namedSeries(expr: Expr, times: Times, lookbackMs: number): { name: string; window: SampleWindow } | null {
  const selectors = querySelectors(expr);
  if (selectors.length !== 1) return null;
  const matchers = selectors[0]!.matchers;
  const metric = matchers.find((m) => m.name === METRIC_NAME)?.value;
  if (metric === undefined || !matchers.every((m) => m.op === '=')) return null;
  const named = seriesName(
    metric,
    matchers.filter((m) => m.name !== METRIC_NAME).map((m) => [m.name, m.value] as const),
  );
  if (!named.ok) return null;
  try {
    // No series and no reduction: only the times, which do not depend on the catalog.
    const [window] = planWindows(expr, [], times.startMs, times.endMs, times.stepMs, lookbackMs, null);
    return window ? { name: named.name, window } : null;
  } catch {
    // Times out of range: the plan after the catalog says so, in its turn.
    return null;
  }
}

const sameTimes = (a: SampleWindow, b: SampleWindow) =>
  a.fromMs === b.fromMs &&
  a.toMs === b.toMs &&
  a.sparse?.firstRefMs === b.sparse?.firstRefMs &&
  a.sparse?.stepMs === b.sparse?.stepMs &&
  a.sparse?.widthMs === b.sparse?.widthMs;

/** Starts the read ahead of a single-series query, or null when the query is not one. */
export function readAhead(
  conn: ConnOptions,
  user: UserRecord,
  expr: Expr,
  times: Times,
  lookbackMs: number,
  maxSamples: number,
  queryId: string,
  signal: AbortSignal,
): ReadAhead | null {
  const guess = namedSeries(expr, times, lookbackMs);
  if (!guess || !canRead(user, guess.name)) return null;
  const own = new AbortController();
  const { fromMs, toMs, sparse } = guess.window;
  const read = readSamples(conn, {
    names: [guess.name],
    fromMs,
    toMs,
    sparse,
    maxSamples,
    queryId: `${queryId}-${PART}`,
    signal: AbortSignal.any([signal, own.signal]),
  });
  let settled = false;
  // Awaited only when taken; a dropped read's failure (its abort) is nobody's.
  read.then(
    () => (settled = true),
    () => (settled = true),
  );
  let state: 'pending' | 'taken' | 'dropped' = 'pending';
  return {
    take(w, budget) {
      if (state !== 'pending' || budget !== maxSamples || w.reduce !== null || w.names.length !== 1 || w.names[0] !== guess.name || !sameTimes(w, guess.window))
        return null;
      state = 'taken';
      return read;
    },
    drop() {
      if (state !== 'pending') return;
      state = 'dropped';
      // A read already answered (a name that does not exist is answered at once) has nothing left to stop.
      if (settled) return;
      own.abort();
      void cancelQueryPart(conn, queryId, PART).catch(() => {});
    },
  };
}
