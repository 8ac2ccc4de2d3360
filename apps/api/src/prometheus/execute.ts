import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { cancelQueries, readSamples, streamSamples, type ConnOptions, type SeriesSamples } from '@meridian/clickhouse';
import {
  evalInstant,
  evalRange,
  execution,
  compareLabels,
  foldGroups,
  planWindows,
  PromqlError,
  type Expr,
  type QueryResult,
  type RollupPolicy,
  type SampleWindow,
  type SeriesData,
  type StepValues,
  seriesStepValues,
  selectorMetricNames,
  type UserRecord,
} from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { MetricCatalog } from '../catalog/routes.ts';
import { readAhead } from './ahead.ts';
import { readRollupWindow, type KnownSeries } from './rollup-read.ts';
import { readableSeries } from './select.ts';

/** MERIDIAN_PROMQL_*: what one query may cost. */
export type PromqlLimits = {
  readonly maxSamples: number;
  readonly maxSeries: number;
  readonly maxPointsPerSeries: number;
  readonly timeoutMs: number;
};

export type PromqlDeps = {
  readonly conn: ConnOptions;
  readonly catalog: MetricCatalog;
  readonly limits: PromqlLimits;
  /** MERIDIAN_PROMQL_REDUCE_RATIO: when the range functions that can be are reduced per series as their samples arrive. */
  readonly reduceRatio: number;
  /** MERIDIAN_PROMQL_ROLLUP_MIN_RANGE and _MIN_POINTS_PER_BUCKET: when a window is read from the rollups; null never. */
  readonly rollups: RollupPolicy | null;
  /** Largest form body of a POST (MERIDIAN_MAX_SMALL_JSON_BODY_BYTES). */
  readonly maxBodyBytes: number;
};

/** Prometheus' default lookback: an instant selector sees a series' latest sample up to 5 minutes old. */
export const LOOKBACK_MS = 5 * 60_000;

export type QueryTimes = { readonly startMs: number; readonly endMs: number; readonly stepMs: number; readonly instant: boolean };

/**
 * One query's run: the readable series matched by each selector (in the api, against the
 * parsed catalog names), their samples read from ClickHouse (names as external data; the
 * window and the sparse steps there; time order and deduplication here), reduced per series as
 * they arrive where planned, then the evaluation. Every read is
 * bounded (samples, series), and the whole query by a deadline: past it, or when the client
 * goes away or the request times out, the ClickHouse queries are killed by their id prefix.
 */
export async function runQuery(deps: PromqlDeps, ctx: Context, user: UserRecord, expr: Expr, times: QueryTimes, timeoutMs: number): Promise<QueryResult> {
  const { limits } = deps;
  const deadline = performance.now() + timeoutMs;
  const queryId = randomUUID();
  const abort = new AbortController();
  // Why the query was stopped, once it was (read by the awaits and the evaluation's checkpoint).
  const stopped: { why: PromqlError | null } = { why: null };
  const stop = (reason: PromqlError) => {
    if (abort.signal.aborted) return;
    stopped.why = reason;
    abort.abort(reason);
    void cancelQueries(deps.conn, queryId).catch(() => {});
  };
  const timer = setTimeout(
    () => stop(new PromqlError('timeout', `query timed out in query execution after ${timeoutMs} ms (MERIDIAN_PROMQL_TIMEOUT_MS or the timeout parameter)`)),
    timeoutMs,
  );
  const requestSignal = ctx.state.signal as AbortSignal | undefined;
  const onRequestTimeout = () => stop(new PromqlError('timeout', 'the request timed out'));
  const onClose = () => {
    if (!ctx.res.writableFinished) stop(new PromqlError('canceled', 'the client went away'));
  };
  requestSignal?.addEventListener('abort', onRequestTimeout, { once: true });
  ctx.res.on('close', onClose);
  const ahead = readAhead(deps.conn, user, expr, times, LOOKBACK_MS, limits.maxSamples, queryId, abort.signal);
  try {
    const series = await readableSeries(deps.catalog, user, selectorMetricNames(expr));
    const catalogMs = performance.now() - (deadline - timeoutMs);
    const known = new Map(series.map((s) => [s.name, s]));
    const windows = planWindows(expr, series, times.startMs, times.endMs, times.stepMs, LOOKBACK_MS, deps.reduceRatio, deps.rollups);
    const first = windows.length === 1 ? (ahead?.take(windows[0]!, limits.maxSamples) ?? null) : null;
    ahead?.drop();
    (ctx.state.log as Logger).info(
      {
        clickhouse_query_id: queryId,
        selectors: windows.length,
        reduced: windows.filter((w) => w.reduce).length,
        rollups: windows.filter((w) => w.rollup).map((w) => w.rollup!.bucketMs),
        catalog_ms: Number(catalogMs.toFixed(1)),
        // taken; dropped (started, then not the series the plan reads); none (not one series, or one the caller may not read)
        read_ahead: first !== null ? 'taken' : ahead ? 'dropped' : 'none',
      },
      'promql query',
    );
    const { fetched, reduced, reducedAggregates, samples } = await readWindows(deps, windows, known, queryId, abort.signal, stopped, first);
    const readMs = performance.now() - (deadline - timeoutMs);
    const checkpoint = () => {
      if (stopped.why) throw stopped.why;
      if (performance.now() > deadline)
        throw new PromqlError(
          'timeout',
          `query timed out in expression evaluation after ${timeoutMs} ms (MERIDIAN_PROMQL_TIMEOUT_MS or the timeout parameter)`,
        );
    };
    const options = { lookbackMs: LOOKBACK_MS, checkpoint, reduced, reducedAggregates };
    const result = times.instant
      ? evalInstant(expr, fetched, times.startMs, options)
      : evalRange(expr, fetched, times.startMs, times.endMs, times.stepMs, options);
    const count = result.resultType === 'vector' ? result.samples.length : result.resultType === 'matrix' ? result.series.length : 1;
    (ctx.state.log as Logger).info(
      {
        clickhouse_query_id: queryId,
        samples,
        read_ms: Math.round(readMs),
        eval_ms: Math.round(performance.now() - (deadline - timeoutMs) - readMs),
        series: count,
      },
      'promql query evaluated',
    );
    if (count > limits.maxSeries)
      throw execution(`the query answers ${count} series, more than ${limits.maxSeries} (MERIDIAN_PROMQL_MAX_SERIES); aggregate or narrow it`);
    return result;
  } finally {
    ahead?.drop();
    clearTimeout(timer);
    requestSignal?.removeEventListener('abort', onRequestTimeout);
    ctx.res.off('close', onClose);
  }
}

/**
 * Reads every window the plan asks for, in order, within the query's bounds: its series count,
 * and the samples left of the query's cap. A read that fails once the query was stopped answers
 * why it was stopped.
 */
async function readWindows(
  deps: PromqlDeps,
  windows: readonly SampleWindow[],
  known: ReadonlyMap<string, KnownSeries>,
  queryId: string,
  signal: AbortSignal,
  stopped: { readonly why: PromqlError | null },
  /** The first window's samples when they were read ahead (ahead.ts). */
  readFirst: Promise<SeriesSamples[] | 'too_many'> | null = null,
) {
  const { limits } = deps;
  const fetched = new Map<number, SeriesData[]>();
  const reduced = new Map<number, StepValues[]>();
  const reducedAggregates = new Map<number, StepValues[]>();
  let samples = 0;
  const tooMany = () =>
    execution(
      `query processing would load too many samples into memory in query execution: more than ${limits.maxSamples} (MERIDIAN_PROMQL_MAX_SAMPLES); narrow the selectors or the range`,
    );
  for (const [i, w] of windows.entries()) {
    if (w.names.length > limits.maxSeries) {
      throw execution(
        `a selector matches ${w.names.length} series, more than ${limits.maxSeries} (MERIDIAN_PROMQL_MAX_SERIES); narrow it with more label matchers`,
      );
    }
    const request = {
      names: w.names,
      fromMs: w.fromMs,
      toMs: w.toMs,
      sparse: w.sparse,
      maxSamples: limits.maxSamples - samples,
      queryId: `${queryId}-${i}`,
      signal,
    };
    try {
      if (w.reduce?.aggregate) {
        const { values, read } = await readStoreAggregated(deps.conn, w, request, known);
        if (read === 'too_many') throw tooMany();
        samples += read;
        reducedAggregates.set(w.selectorId, values);
        continue;
      }
      if (w.reduce) {
        const { values, read } = await readStepValues(deps.conn, w, request, known);
        if (read === 'too_many') throw tooMany();
        samples += read;
        reduced.set(
          w.selectorId,
          values.map((v) => v.values),
        );
        continue;
      }
      const read = await ((i === 0 ? readFirst : null) ?? readSamples(deps.conn, request));
      if (read === 'too_many') throw tooMany();
      samples += read.reduce((n, s) => n + s.ts.length, 0);
      fetched.set(
        w.selectorId,
        read.map((s) => ({ labels: known.get(s.name)!.labels, ts: s.ts, vs: s.vs })),
      );
    } catch (cause) {
      if (stopped.why) throw stopped.why;
      if (cause instanceof PromqlError) throw cause;
      throw new PromqlError('unavailable', 'the metric store did not answer; retry later', { cause });
    }
  }
  return { fetched, reduced, reducedAggregates, samples };
}

type StepValuesRead = { values: Array<{ name: string; values: StepValues }>; read: number | 'too_many' };

/**
 * A reduced selector's function value at every step of every series: from the rollup where the
 * plan says its windows are whole buckets, else computed as each series' samples arrive (none is
 * kept: each is read into the same arrays as the one before).
 */
async function readStepValues(
  conn: ConnOptions,
  w: SampleWindow,
  request: Parameters<typeof readSamples>[1],
  known: ReadonlyMap<string, KnownSeries>,
): Promise<StepValuesRead> {
  if (w.rollup) {
    const fromRollup = await readRollupWindow(conn, w, request, known);
    if (fromRollup !== 'raw') return fromRollup;
  }
  const reduce = w.reduce!;
  const values: Array<{ name: string; values: StepValues }> = [];
  const read = await streamSamples(conn, request, (s) =>
    values.push({ name: s.name, values: seriesStepValues(reduce.func, known.get(s.name)!.labels, s.ts, s.vs, reduce, s.n) }),
  );
  return { values, read };
}

/** An aggregation of a reduced function: each series reduced as it arrives, then folded into its group in the evaluation's order. */
async function readStoreAggregated(
  conn: ConnOptions,
  w: SampleWindow,
  request: Parameters<typeof readSamples>[1],
  known: ReadonlyMap<string, KnownSeries>,
): Promise<{ values: StepValues[]; read: number | 'too_many' }> {
  const reduce = w.reduce!;
  const aggregate = reduce.aggregate!;
  const groupOf = new Map(w.names.map((name, i) => [name, aggregate.groupOf[i]!]));
  const { values, read } = await readStepValues(conn, w, request, known);
  if (read === 'too_many') return { values: [], read };
  // The evaluation adds a step's vector in the order of its series' labels: the same order here, so the same floats.
  values.sort((a, b) => compareLabels(a.values.labels, b.values.labels));
  const folded = foldGroups(
    aggregate.op,
    values.map((v) => v.values),
    values.map((v) => groupOf.get(v.name)!),
    aggregate.labels,
    reduce.steps,
  );
  return { values: folded, read };
}
