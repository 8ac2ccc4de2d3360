import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { cancelQueries, readSeries, seriesRollup, type ConnOptions } from '@meridian/clickhouse';
import {
  canRead,
  DomainError,
  formatTimestamp,
  parseSeriesParams,
  PATTERNS,
  resolveMetricNames,
  seriesWindow,
  type SeriesLimits,
  type SeriesParams,
  type UserRecord,
} from '@meridian/domain';
import { patternEntries, type MetricCatalog } from '../catalog/routes.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';

/** limits: MERIDIAN_MAX_SERIES_POINTS and MERIDIAN_MAX_SERIES_PER_REQUEST. */
export type SeriesDeps = {
  readonly conn: ConnOptions;
  readonly catalog: MetricCatalog;
  readonly limits: SeriesLimits;
};

export const SERIES_PATH = '/api/v1/metrics/series';

const querySchema = z.object({
  metrics: z.string().describe('As in a download: a metric name, a comma-separated list (pattern=list), or the text a substring pattern applies to'),
  pattern: z
    .enum(PATTERNS as [string, ...string[]])
    .optional()
    .describe('As in a download: single (default), list, contains, starts_with, ends_with'),
  start_date: z
    .string()
    .optional()
    .describe('Inclusive, as in a download (YYYY-MM-DD or an ISO 8601 date-time with an offset). Left out: the first point of the chosen metrics'),
  end_date: z.string().optional().describe('Inclusive, as in a download. Left out: the last point of the chosen metrics'),
  points: z
    .string()
    .optional()
    .describe(
      'Most buckets per series: the step is the smallest round width (1, 2, 5 ms … 1 s, 5 s, 1 min … 1 h … 1 day, then whole days) that covers the whole range in at most this many. Default 1000; at most MERIDIAN_MAX_SERIES_POINTS (default 10,000)',
    ),
  step: z
    .string()
    .optional()
    .describe('The bucket width in milliseconds, instead of points; 400 when it makes more than MERIDIAN_MAX_SERIES_POINTS buckets over the range'),
});

const seriesSchema = z.object({
  metric_name: z.string(),
  t: z.array(z.number().int()).describe("Each bucket's start, epoch milliseconds (a multiple of step_ms); only buckets holding points, ascending"),
  min: z.array(z.number()).describe('The smallest value in each bucket'),
  max: z.array(z.number()).describe('The largest value in each bucket'),
  avg: z.array(z.number()).describe('The mean value in each bucket'),
  count: z.array(z.number().int()).describe('Points in each bucket (every stored row, as a download without latest_only counts them)'),
});

const answerSchema = z.object({
  start: z
    .string()
    .nullable()
    .describe(
      'The range charted, inclusive, UTC as in a download: start_date, or the first point of the chosen metrics; null when nothing matched and no range was given',
    ),
  end: z.string().nullable(),
  start_ms: z.number().int().nullable().describe('start as epoch milliseconds'),
  end_ms: z.number().int().nullable(),
  step_ms: z.number().int().nullable().describe('The bucket width; buckets are aligned to the epoch (bucket = floor(timestamp / step_ms) × step_ms)'),
  rollup: z
    .enum(['1m', '1h'])
    .nullable()
    .describe(
      'The rollup the buckets wholly inside the range were read from (a step of whole minutes or hours), or null: every bucket from the points. The figures are the same either way',
    ),
  series: z
    .array(seriesSchema)
    .describe('One per metric, ordered by name (bytewise, as downloads order rows); a metric without points in the range has empty arrays'),
});

const example = {
  start: '2024-01-01T00:00:00+0000',
  end: '2024-01-01T00:02:59+0000',
  start_ms: 1704067200000,
  end_ms: 1704067379000,
  step_ms: 60000,
  rollup: '1m',
  series: [
    {
      metric_name: 'cpu:load',
      t: [1704067200000, 1704067260000, 1704067320000],
      min: [0.5, 0.25, 0.75],
      max: [0.9, 0.5, 1],
      avg: [0.7, 0.4, 0.8],
      count: [60, 60, 60],
    },
  ],
};

/** The readable metrics the parameters choose, exactly as a download resolves them (same 404s), and their extent. */
async function resolve(
  deps: SeriesDeps,
  params: SeriesParams,
  user: UserRecord,
): Promise<{ names: string[]; extent: { firstMs: number; lastMs: number } | null }> {
  const catalog = await patternEntries(deps.catalog, params.pattern, params.metrics);
  const names = resolveMetricNames(
    params.pattern,
    params.metrics,
    catalog.map((c) => c.metric_name),
    (name) => canRead(user, name),
  );
  const chosen = new Set(names);
  let extent: { firstMs: number; lastMs: number } | null = null;
  for (const entry of catalog) {
    if (!chosen.has(entry.metric_name)) continue;
    extent =
      extent === null
        ? { firstMs: entry.first_ts, lastMs: entry.last_ts }
        : { firstMs: Math.min(extent.firstMs, entry.first_ts), lastMs: Math.max(extent.lastMs, entry.last_ts) };
  }
  return { names, extent };
}

/**
 * GET /api/v1/metrics/series: what a chart of any range draws. The whole range is sampled (the
 * buckets cover it from start to end), the work is ClickHouse's (one GROUP BY over the points
 * in range), and the answer is bounded: at most MERIDIAN_MAX_SERIES_POINTS buckets for each of
 * at most MERIDIAN_MAX_SERIES_PER_REQUEST metrics.
 */
export function seriesRoute(deps: SeriesDeps): RouteDef {
  return defineRoute({
    method: 'GET',
    path: SERIES_PATH,
    operationId: 'metricSeries',
    summary: 'Metric points sampled over a whole range: per time bucket, min, max, average and count',
    description: [
      'The metrics, pattern, start_date and end_date of a download choose the points, with the same entitlements: single and list name metrics exactly (a name that does not exist or that you may not read: 404, the same for both); contains, starts_with and ends_with apply to the metrics you may read and may match none (200, no series).',
      'The range is split into buckets of step_ms, aligned to the epoch; each bucket that holds points gives their min, max, average and count, so a chart of four months shows all four months, its peaks included.',
      'Where step_ms is a whole number of minutes or hours, the buckets wholly inside the range are read from the 1m or 1h rollups (the same figures: min, max and count of every stored row, the average up to the rounding of its sum), the partial ones at either end from the points.',
      'Bounds: at most MERIDIAN_MAX_SERIES_POINTS buckets per series (points above it, or a step making more buckets over the range: 400 naming the setting) and MERIDIAN_MAX_SERIES_PER_REQUEST metrics (a list naming more or a pattern matching more: 400 naming the setting).',
      'The same points, unsampled: GET /api/v1/metrics/download with the same metrics, pattern, start_date and end_date.',
    ].join(' '),
    tags: ['metrics'],
    auth: 'user',
    query: querySchema,
    responses: { 200: { description: 'The sampled series', schema: answerSchema, example } },
    problems: ['not_found', 'unavailable'],
    handler: async (ctx, { user }) => {
      const params = parseSeriesParams(ctx.query, deps.limits);
      const { names, extent } = await resolve(deps, params, user);
      const window = seriesWindow(params, extent, names.length, deps.limits);
      ctx.set('Cache-Control', 'no-store');
      if (window === null) {
        ctx.body = { start: null, end: null, start_ms: null, end_ms: null, step_ms: null, rollup: null, series: [] };
        return;
      }
      const queryId = randomUUID();
      ctx.state.log.info({ clickhouse_query_id: queryId, series: names.length, step_ms: window.stepMs }, 'series query');
      // The request timing out or the client going away stops the query on the server too
      // (KILL QUERY: 18.16 notices a closed connection only when it next writes, after its GROUP BY).
      const abort = new AbortController();
      const stop = () => {
        if (abort.signal.aborted) return;
        abort.abort(new Error('the request ended'));
        void cancelQueries(deps.conn, queryId).catch(() => {});
      };
      const timedOut = ctx.state.signal as AbortSignal | undefined;
      timedOut?.addEventListener('abort', stop, { once: true });
      const onClose = () => {
        if (!ctx.res.writableFinished) stop();
      };
      ctx.res.on('close', onClose);
      let series;
      try {
        series = await readSeries(deps.conn, {
          metricNames: names,
          fromMs: window.fromMs,
          toMs: window.toMs,
          stepMs: window.stepMs,
          queryId,
          signal: abort.signal,
        });
      } catch (cause) {
        throw new DomainError('unavailable', 'the metric store did not answer; retry later', [], { cause });
      } finally {
        timedOut?.removeEventListener('abort', stop);
        ctx.res.off('close', onClose);
      }
      ctx.body = {
        start: formatTimestamp(window.fromMs),
        end: formatTimestamp(window.toMs),
        start_ms: window.fromMs,
        end_ms: window.toMs,
        step_ms: window.stepMs,
        rollup: seriesRollup(window.fromMs, window.toMs, window.stepMs),
        series,
      };
    },
  });
}
