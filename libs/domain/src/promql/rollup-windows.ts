import type { Labels } from '../series/labels.ts';
import type { StepValues } from './eval.ts';
import type { ReduceSteps } from './reduce.ts';

/**
 * Range functions whose value over a window is a function of per-bucket aggregates of the
 * window's samples (count, min, max, sum, the last value), so a rollup of whole buckets answers
 * them: min, max and count and last exactly; sum as the same values added in another grouping
 * (equal for integers; see docs on the query API). Not avg: the raw path keeps Prometheus'
 * running mean, which a sum over a count does not give bit for bit (and overflows where the
 * mean does not: two points of 1e308).
 */
export const ROLLUP_FUNCTIONS = ['min_over_time', 'max_over_time', 'sum_over_time', 'count_over_time', 'last_over_time'] as const;
export type RollupFunction = (typeof ROLLUP_FUNCTIONS)[number];

/** The rollups' bucket widths, widest first: a window is read from the widest that tiles it. */
export const ROLLUP_BUCKETS_MS = [3_600_000, 60_000] as const;

export const isRollupFunction = (func: string): func is RollupFunction => (ROLLUP_FUNCTIONS as readonly string[]).includes(func);

/**
 * The bucket width a function's windows can be read from, or null. A step's window is the closed
 * [t − range, t] (t = the step's time minus the offset, as the evaluation selects samples), and it
 * is whole buckets [t − range, t) plus the sample at exactly t only when range and every t are
 * multiples of the bucket: t − range is then a bucket's start, t the start of the bucket after.
 */
export function rollupBucketMs(
  func: string,
  rangeMs: number,
  r: Pick<ReduceSteps, 'firstRefMs' | 'stepMs' | 'steps'>,
  minRangeMs: number | null,
): number | null {
  if (minRangeMs === null || !isRollupFunction(func) || rangeMs < minRangeMs || rangeMs <= 0) return null;
  for (const bucket of ROLLUP_BUCKETS_MS) {
    const aligned = rangeMs % bucket === 0 && r.firstRefMs % bucket === 0 && (r.steps === 1 || r.stepMs % bucket === 0);
    if (aligned) return bucket;
  }
  return null;
}

/** One bucket's aggregates of the deduplicated samples in it (bucket: its start, epoch ms). */
export type BucketAggregates = {
  readonly bucket: number;
  readonly count: number;
  readonly min: number;
  readonly max: number;
  readonly sum: number;
  readonly last: number;
};

/**
 * What one series is read as: its buckets (ascending, every one at or after fromBucketMs; the
 * earlier ones are ignored), and the samples the buckets leave out, ascending: those before
 * fromBucketMs (a first bucket partly gone from the raw points, which the rollup outlives) and
 * those at exactly a step's time.
 */
export type RollupSeries = {
  readonly labels: Labels;
  readonly buckets: readonly BucketAggregates[];
  readonly fromBucketMs: number;
  readonly ts: readonly number[];
  readonly vs: readonly number[];
};

type Acc = { count: number; min: number; max: number; sum: number; c: number; last: number };

/** Kahan-Babuška-Neumaier, as the evaluation adds samples. */
function add(acc: Acc, count: number, min: number, max: number, sum: number, last: number): void {
  if (acc.count === 0 || min < acc.min) acc.min = min;
  if (acc.count === 0 || max > acc.max) acc.max = max;
  acc.count += count;
  const t = acc.sum + sum;
  acc.c += Math.abs(acc.sum) >= Math.abs(sum) ? acc.sum - t + sum : sum - t + acc.sum;
  acc.sum = t;
  acc.last = last;
}

function valueOf(func: RollupFunction, a: Acc): number {
  const sum = Number.isFinite(a.sum) ? a.sum + a.c : a.sum;
  switch (func) {
    case 'min_over_time':
      return a.min;
    case 'max_over_time':
      return a.max;
    case 'sum_over_time':
      return sum;
    case 'count_over_time':
      return a.count;
    case 'last_over_time':
      return a.last;
    default: {
      const never: never = func;
      return never;
    }
  }
}

/**
 * The function's value at every step of one series from its buckets and left-out samples: step
 * k's window [t − range, t] (t = firstRefMs + k·stepMs) is the samples before fromBucketMs in it,
 * the buckets starting in [t − range, t), then the sample at exactly t, in time order.
 */
export function rollupStepValues(func: RollupFunction, s: RollupSeries, r: ReduceSteps): StepValues {
  const present = new Uint8Array(r.steps);
  const values = new Float64Array(r.steps);
  const { buckets, ts, vs, fromBucketMs } = s;
  let bLo = 0;
  let sLo = 0;
  for (let k = 0; k < r.steps; k++) {
    const end = r.firstRefMs + k * r.stepMs;
    const start = end - r.rangeMs;
    const acc: Acc = { count: 0, min: 0, max: 0, sum: 0, c: 0, last: 0 };
    while (sLo < ts.length && ts[sLo]! < start) sLo++;
    for (let i = sLo; i < ts.length && ts[i]! < fromBucketMs && ts[i]! <= end; i++) add(acc, 1, vs[i]!, vs[i]!, vs[i]!, vs[i]!);
    while (bLo < buckets.length && buckets[bLo]!.bucket < start) bLo++;
    for (let i = bLo; i < buckets.length && buckets[i]!.bucket < end; i++) {
      const b = buckets[i]!;
      if (b.bucket >= fromBucketMs) add(acc, b.count, b.min, b.max, b.sum, b.last);
    }
    const atEnd = binarySearch(ts, end);
    if (atEnd >= 0 && end >= fromBucketMs) add(acc, 1, vs[atEnd]!, vs[atEnd]!, vs[atEnd]!, vs[atEnd]!);
    if (acc.count === 0) continue;
    present[k] = 1;
    values[k] = valueOf(func, acc);
  }
  return { labels: s.labels, present, values };
}

/** The index of `t` in ascending `ts`, or -1. */
function binarySearch(ts: readonly number[], t: number): number {
  let lo = 0;
  let hi = ts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = ts[mid]!;
    if (v === t) return mid;
    if (v < t) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
