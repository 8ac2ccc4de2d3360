import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** What one PromQL query may cost. */
export const prometheusSettings = {
  MERIDIAN_PROMQL_MAX_SAMPLES: {
    schema: z.coerce.number().int().min(1000).max(100_000_000),
    default: '5000000',
    doc: 'Most samples (stored points) one PromQL query may read from ClickHouse, over all its selectors; past it the query gets 422 (errorType execution) naming the setting. The samples are held in the api while the query is evaluated: about 16 bytes each.',
  },
  MERIDIAN_PROMQL_MAX_SERIES: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '10000',
    doc: 'Most series one PromQL selector may choose and one query may answer (and the most series, label names or values GET series, labels and label values list); past it: 422 (errorType execution) naming the setting.',
  },
  MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES: {
    schema: z.coerce.number().int().min(10).max(1_000_000),
    default: '11000',
    doc: "Most steps of a PromQL range query ((end − start) / step); more gets 400 (errorType bad_data) with Prometheus' own message, whose bound is the same 11,000 by default.",
  },
  MERIDIAN_PROMQL_REDUCE_RATIO: {
    schema: z.coerce.number().min(0).max(1e12),
    default: '0',
    doc: 'When a PromQL range function (rate, increase, delta, irate, resets, changes, the _over_time functions but quantile_over_time) is reduced per series as its samples arrive, to its value at every step, rather than its samples kept and evaluated step by step: when the samples in range (estimated from the catalog) are at least this many times the values it answers (series × steps). 0 always reduces (both ways give the same answer; reducing is the cheaper); a huge value never does.',
  },
  MERIDIAN_PROMQL_ROLLUP_MIN_RANGE: {
    schema: z.string().regex(/^(off|[1-9]\d{0,5}[mhd])$/, 'a number of minutes, hours or days (30m, 1h, 2d), or off'),
    default: '1h',
    doc: 'The shortest range of a min_over_time, max_over_time, sum_over_time, count_over_time or last_over_time window read from the per-minute or per-hour rollups instead of the raw points, when the range and every evaluation time (offset applied) are multiples of the bucket: the answer is the same (a sum up to the rounding of one added in another order; avg_over_time always reads the raw points, whose running mean a sum over a count does not give bit for bit), at one row a bucket. `off` reads every window from the raw points.',
  },
  MERIDIAN_PROMQL_ROLLUP_MIN_POINTS_PER_BUCKET: {
    schema: z.coerce.number().min(0).max(1e9),
    default: '500',
    doc: 'A window MERIDIAN_PROMQL_ROLLUP_MIN_RANGE lets read the rollups reads them only when the points in range (estimated from the catalog) are at least this many per bucket read (series × buckets); sparser series are read raw, which is then the cheaper (docs/benchmarks.md: at 42 points an hour the rollup read took 5.7 times the raw one, at 3,600 it took 0.4 times). 0 reads the rollups whatever the points.',
  },
  MERIDIAN_PROMQL_TIMEOUT_MS: {
    schema: positiveInt,
    default: '20000',
    doc: "Longest one PromQL query may run, its ClickHouse reads (stopped with KILL QUERY) and its evaluation included; past it: 503 (errorType timeout). Keep it below MERIDIAN_REQUEST_TIMEOUT_MS so the answer is Prometheus' error, not the api's. A smaller `timeout` parameter of the request wins.",
  },
} as const;

/** MERIDIAN_PROMQL_ROLLUP_MIN_RANGE in milliseconds, null for off. */
export function rollupMinRangeMs(setting: string): number | null {
  if (setting === 'off') return null;
  return Number(setting.slice(0, -1)) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[setting.slice(-1) as 'm' | 'h' | 'd'];
}
