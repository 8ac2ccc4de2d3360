import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { cancelDownload, readSamples, type ConnOptions } from '@meridian/clickhouse';
import {
  evalInstant, evalRange, execution, planWindows, PromqlError, type Expr, type QueryResult, type SeriesData, type UserRecord,
} from '@meridian/domain';
import type { MetricCatalog } from '../catalog/routes.ts';
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
  /** Largest form body of a POST (MERIDIAN_MAX_SMALL_JSON_BODY_BYTES). */
  readonly maxBodyBytes: number;
};

/** Prometheus' default lookback: an instant selector sees a series' latest sample up to 5 minutes old. */
export const LOOKBACK_MS = 5 * 60_000;

export type QueryTimes = { readonly startMs: number; readonly endMs: number; readonly stepMs: number; readonly instant: boolean };

/**
 * One query's run: the readable series matched by each selector (in the api, against the
 * parsed catalog names), their samples read from ClickHouse (names as external data; the
 * window, the sparse steps and the deduplication there), then the evaluation. Every read is
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
    void cancelDownload(deps.conn, queryId).catch(() => {});
  };
  const timer = setTimeout(() => stop(new PromqlError('timeout', `query timed out in query execution after ${timeoutMs} ms (MERIDIAN_PROMQL_TIMEOUT_MS or the timeout parameter)`)), timeoutMs);
  const requestSignal = ctx.state.signal as AbortSignal | undefined;
  const onRequestTimeout = () => stop(new PromqlError('timeout', 'the request timed out'));
  const onClose = () => { if (!ctx.res.writableFinished) stop(new PromqlError('canceled', 'the client went away')); };
  requestSignal?.addEventListener('abort', onRequestTimeout, { once: true });
  ctx.res.on('close', onClose);
  try {
    const series = await readableSeries(deps.catalog, user);
    const labelsOf = new Map(series.map((s) => [s.name, s.labels]));
    const windows = planWindows(expr, series, times.startMs, times.endMs, times.stepMs, LOOKBACK_MS);
    const fetched = new Map<number, SeriesData[]>();
    let samples = 0;
    for (const [i, w] of windows.entries()) {
      if (w.names.length > limits.maxSeries) {
        throw execution(`a selector matches ${w.names.length} series, more than ${limits.maxSeries} (MERIDIAN_PROMQL_MAX_SERIES); narrow it with more label matchers`);
      }
      const budget = limits.maxSamples - samples;
      let read;
      try {
        read = await readSamples(deps.conn, { names: w.names, fromMs: w.fromMs, toMs: w.toMs, sparse: w.sparse, maxSamples: budget, queryId: `${queryId}-${i}`, signal: abort.signal });
      } catch (cause) {
        if (stopped.why) throw stopped.why;
        throw new PromqlError('unavailable', 'the metric store did not answer; retry later', { cause });
      }
      if (read === 'too_many') {
        throw execution(`query processing would load too many samples into memory in query execution: more than ${limits.maxSamples} (MERIDIAN_PROMQL_MAX_SAMPLES); narrow the selectors or the range`);
      }
      samples += read.reduce((n, s) => n + s.ts.length, 0);
      fetched.set(w.selectorId, read.map((s) => ({ labels: labelsOf.get(s.name)!, ts: s.ts, vs: s.vs })));
    }
    const checkpoint = () => {
      if (stopped.why) throw stopped.why;
      if (performance.now() > deadline) throw new PromqlError('timeout', `query timed out in expression evaluation after ${timeoutMs} ms (MERIDIAN_PROMQL_TIMEOUT_MS or the timeout parameter)`);
    };
    const options = { lookbackMs: LOOKBACK_MS, checkpoint };
    const result = times.instant
      ? evalInstant(expr, fetched, times.startMs, options)
      : evalRange(expr, fetched, times.startMs, times.endMs, times.stepMs, options);
    const count = result.resultType === 'vector' ? result.samples.length : result.resultType === 'matrix' ? result.series.length : 1;
    if (count > limits.maxSeries) throw execution(`the query answers ${count} series, more than ${limits.maxSeries} (MERIDIAN_PROMQL_MAX_SERIES); aggregate or narrow it`);
    return result;
  } finally {
    clearTimeout(timer);
    requestSignal?.removeEventListener('abort', onRequestTimeout);
    ctx.res.off('close', onClose);
  }
}
