import type { RangeFunction } from './ast.ts';

/**
 * The range-vector functions over one series' samples in a window, [lo, hi] indices of `ts`
 * (epoch ms, ascending) and `vs`, exactly as Prometheus 2.42 computes them (promql/functions.go):
 * the same extrapolation, counter-reset and float rules, in the same order of operations, so
 * the answers agree to the last bits. null: no output for this series at this step.
 */
export type Window = { readonly ts: readonly number[]; readonly vs: readonly number[]; readonly lo: number; readonly hi: number };

/**
 * Where the window sits: its range's start and end (offset applied) and its length in seconds;
 * evalMs, the evaluation time (no offset), where predict_linear anchors its line (default: the end).
 */
export type WindowBounds = { readonly rangeStartMs: number; readonly rangeEndMs: number; readonly rangeSeconds: number; readonly evalMs?: number };

export function evalRangeFunction(func: RangeFunction, w: Window, bounds: WindowBounds, param: number): number | null {
  const n = w.hi - w.lo + 1;
  if (n < 1) return null;
  switch (func) {
    case 'rate':
      return extrapolatedRate(w, bounds, true, true);
    case 'increase':
      return extrapolatedRate(w, bounds, true, false);
    case 'delta':
      return extrapolatedRate(w, bounds, false, false);
    case 'irate':
      return instantRate(w, true);
    case 'idelta':
      return instantRate(w, false);
    case 'deriv':
      return n < 2 ? null : linearRegression(w, w.ts[w.lo]!)[0];
    case 'predict_linear': {
      if (n < 2) return null;
      const [slope, intercept] = linearRegression(w, bounds.evalMs ?? bounds.rangeEndMs);
      return slope * param + intercept;
    }
    case 'absent_over_time':
      // Answered from whether any series has a sample, not from one series' window (eval.ts).
      return null;
    case 'resets':
      return resets(w);
    case 'changes':
      return changes(w);
    case 'avg_over_time':
      return avgOverTime(w);
    case 'min_over_time':
      return minOverTime(w);
    case 'max_over_time':
      return maxOverTime(w);
    case 'sum_over_time':
      return sumOverTime(w);
    case 'count_over_time':
      return n;
    case 'last_over_time':
      return w.vs[w.hi]!;
    case 'quantile_over_time':
      return quantile(param, w.vs.slice(w.lo, w.hi + 1));
    default: {
      const never: never = func;
      return never;
    }
  }
}

function extrapolatedRate(w: Window, b: WindowBounds, isCounter: boolean, isRate: boolean): number | null {
  const { ts, vs, lo, hi } = w;
  if (hi - lo + 1 < 2) return null;
  // As Prometheus: each counter reset adds the value before it, one after the other.
  let resultValue = vs[hi]! - vs[lo]!;
  if (isCounter) {
    for (let i = lo + 1; i <= hi; i += 1) if (vs[i]! < vs[i - 1]!) resultValue += vs[i - 1]!;
  }
  return extrapolate(hi - lo + 1, ts[lo]!, vs[lo]!, ts[hi]!, resultValue, b, isCounter, isRate);
}

/**
 * Prometheus 2.42's extrapolatedRate from what it reads of a window: the sample count, the first
 * sample, the last one's time and the raw increase (counter resets added), with the same float
 * operations in the same order (the factor first, then the value times it).
 */
function extrapolate(n: number, tFirst: number, vFirst: number, tLast: number, increase: number, b: WindowBounds, isCounter: boolean, isRate: boolean): number {
  let durationToStart = (tFirst - b.rangeStartMs) / 1000;
  const durationToEnd = (b.rangeEndMs - tLast) / 1000;
  const sampledInterval = (tLast - tFirst) / 1000;
  const averageDurationBetweenSamples = sampledInterval / (n - 1);
  if (isCounter && increase > 0 && vFirst >= 0) {
    // A counter cannot go below zero: extrapolate no further back than its zero point.
    const durationToZero = sampledInterval * (vFirst / increase);
    if (durationToZero < durationToStart) durationToStart = durationToZero;
  }
  const extrapolationThreshold = averageDurationBetweenSamples * 1.1;
  let extrapolateToInterval = sampledInterval;
  extrapolateToInterval += durationToStart < extrapolationThreshold ? durationToStart : averageDurationBetweenSamples / 2;
  extrapolateToInterval += durationToEnd < extrapolationThreshold ? durationToEnd : averageDurationBetweenSamples / 2;
  let factor = extrapolateToInterval / sampledInterval;
  if (isRate) factor /= b.rangeSeconds;
  return increase * factor;
}

/**
 * The range functions a range query reduces per series as the samples arrive (reduce.ts), so a
 * series' samples are not kept past its reduction. The others (deriv, quantile_over_time, …)
 * are evaluated step by step from the kept samples.
 */
export const WINDOW_STATS_FUNCTIONS = [
  'rate',
  'increase',
  'delta',
  'irate',
  'resets',
  'changes',
  'avg_over_time',
  'min_over_time',
  'max_over_time',
  'sum_over_time',
  'count_over_time',
  'last_over_time',
] as const satisfies readonly RangeFunction[];
export type WindowStatsFunction = (typeof WINDOW_STATS_FUNCTIONS)[number];

/** irate (a counter's last two samples, per second) and idelta (their difference), as Prometheus' instantValue. */
function instantRate(w: Window, isRate: boolean): number | null {
  const { ts, vs, hi } = w;
  if (hi - w.lo + 1 < 2) return null;
  const last = vs[hi]!;
  const previous = vs[hi - 1]!;
  const resultValue = isRate && last < previous ? last : last - previous;
  const sampledInterval = ts[hi]! - ts[hi - 1]!;
  if (sampledInterval === 0) return null;
  return isRate ? resultValue / (sampledInterval / 1000) : resultValue;
}

/** Kahan-Babuška-Neumaier summation step, as Prometheus' kahanSumInc. */
function kahanSumInc(inc: number, sum: number, c: number): [number, number] {
  const t = sum + inc;
  if (Math.abs(sum) >= Math.abs(inc)) c += sum - t + inc;
  else c += inc - t + sum;
  return [t, c];
}

/** Prometheus' linearRegression: least squares over the window, x in seconds from interceptTime, Kahan sums. */
function linearRegression(w: Window, interceptTime: number): [slope: number, intercept: number] {
  const { ts, vs, lo, hi } = w;
  let n = 0;
  let sumX = 0,
    cX = 0,
    sumY = 0,
    cY = 0,
    sumXY = 0,
    cXY = 0,
    sumX2 = 0,
    cX2 = 0;
  const initY = vs[lo]!;
  let constY = true;
  for (let i = lo; i <= hi; i += 1) {
    const v = vs[i]!;
    if (constY && i > lo && v !== initY) constY = false;
    n += 1;
    const x = (ts[i]! - interceptTime) / 1e3;
    [sumX, cX] = kahanSumInc(x, sumX, cX);
    [sumY, cY] = kahanSumInc(v, sumY, cY);
    [sumXY, cXY] = kahanSumInc(x * v, sumXY, cXY);
    [sumX2, cX2] = kahanSumInc(x * x, sumX2, cX2);
  }
  if (constY) return Number.isFinite(initY) ? [0, initY] : [Number.NaN, Number.NaN];
  sumX += cX;
  sumY += cY;
  sumXY += cXY;
  sumX2 += cX2;
  const covXY = sumXY - (sumX * sumY) / n;
  const varX = sumX2 - (sumX * sumX) / n;
  const slope = covXY / varX;
  return [slope, sumY / n - (slope * sumX) / n];
}

function resets(w: Window): number {
  let count = 0;
  let prev = w.vs[w.lo]!;
  for (let i = w.lo + 1; i <= w.hi; i += 1) {
    const current = w.vs[i]!;
    if (current < prev) count += 1;
    prev = current;
  }
  return count;
}

function changes(w: Window): number {
  let count = 0;
  let prev = w.vs[w.lo]!;
  for (let i = w.lo + 1; i <= w.hi; i += 1) {
    const current = w.vs[i]!;
    if (current !== prev && !(Number.isNaN(current) && Number.isNaN(prev))) count += 1;
    prev = current;
  }
  return count;
}

/** Prometheus' running mean with Kahan compensation, Inf-safe as its code. */
function avgOverTime(w: Window): number {
  let mean = 0;
  let c = 0;
  let count = 0;
  for (let i = w.lo; i <= w.hi; i += 1) {
    const v = w.vs[i]!;
    count += 1;
    if (!Number.isFinite(mean) && !Number.isNaN(mean)) {
      if (!Number.isFinite(v) && !Number.isNaN(v) && mean > 0 === v > 0) continue;
      if (Number.isFinite(v)) continue;
    }
    [mean, c] = kahanSumInc(v / count - mean / count, mean, c);
  }
  return !Number.isFinite(mean) && !Number.isNaN(mean) ? mean : mean + c;
}

function minOverTime(w: Window): number {
  let min = w.vs[w.lo]!;
  for (let i = w.lo; i <= w.hi; i += 1) {
    const v = w.vs[i]!;
    if (v < min || Number.isNaN(min)) min = v;
  }
  return min;
}

function maxOverTime(w: Window): number {
  let max = w.vs[w.lo]!;
  for (let i = w.lo; i <= w.hi; i += 1) {
    const v = w.vs[i]!;
    if (v > max || Number.isNaN(max)) max = v;
  }
  return max;
}

function sumOverTime(w: Window): number {
  let sum = 0;
  let c = 0;
  for (let i = w.lo; i <= w.hi; i += 1) [sum, c] = kahanSumInc(w.vs[i]!, sum, c);
  return Number.isFinite(sum) ? sum + c : sum;
}

/** Prometheus' quantile: the weighted average of the two values around rank φ·(n−1). */
export function quantile(q: number, values: number[]): number {
  if (values.length === 0 || Number.isNaN(q)) return Number.NaN;
  if (q < 0) return Number.NEGATIVE_INFINITY;
  if (q > 1) return Number.POSITIVE_INFINITY;
  // Go's sort of vectorByValueHeap: NaN sorts first.
  values.sort((a, b) => (Number.isNaN(a) ? (Number.isNaN(b) ? 0 : -1) : Number.isNaN(b) ? 1 : a - b));
  const n = values.length;
  const rank = q * (n - 1);
  const lowerIndex = Math.max(0, Math.floor(rank));
  const upperIndex = Math.min(n - 1, lowerIndex + 1);
  const weight = rank - Math.floor(rank);
  return values[lowerIndex]! * (1 - weight) + values[upperIndex]! * weight;
}

/** One bucket of a classic histogram: its upper bound (le) and cumulative count. */
export type Bucket = { upperBound: number; count: number };

/** Prometheus' bucketQuantile (histogram_quantile over classic buckets). */
export function bucketQuantile(q: number, input: readonly Bucket[]): number {
  if (Number.isNaN(q)) return Number.NaN;
  if (q < 0) return Number.NEGATIVE_INFINITY;
  if (q > 1) return Number.POSITIVE_INFINITY;
  const sorted = [...input].map((b) => ({ ...b })).sort((a, b) => a.upperBound - b.upperBound);
  if (sorted.length === 0 || sorted[sorted.length - 1]!.upperBound !== Number.POSITIVE_INFINITY) return Number.NaN;
  const buckets = coalesce(sorted);
  ensureMonotonic(buckets);
  if (buckets.length < 2) return Number.NaN;
  const observations = buckets[buckets.length - 1]!.count;
  if (observations === 0) return Number.NaN;
  let rank = q * observations;
  let b = 0;
  // sort.Search over all but the +Inf bucket: the first whose count reaches the rank.
  while (b < buckets.length - 1 && !(buckets[b]!.count >= rank)) b += 1;
  if (b === buckets.length - 1) return buckets[buckets.length - 2]!.upperBound;
  if (b === 0 && buckets[0]!.upperBound <= 0) return buckets[0]!.upperBound;
  let bucketStart = 0;
  const bucketEnd = buckets[b]!.upperBound;
  let count = buckets[b]!.count;
  if (b > 0) {
    bucketStart = buckets[b - 1]!.upperBound;
    count -= buckets[b - 1]!.count;
    rank -= buckets[b - 1]!.count;
  }
  return bucketStart + (bucketEnd - bucketStart) * (rank / count);
}

function coalesce(buckets: Bucket[]): Bucket[] {
  const out: Bucket[] = [];
  let last = buckets[0]!;
  for (const b of buckets.slice(1)) {
    if (b.upperBound === last.upperBound) last.count += b.count;
    else {
      out.push(last);
      last = b;
    }
  }
  out.push(last);
  return out;
}

function ensureMonotonic(buckets: Bucket[]): void {
  let max = Number.NEGATIVE_INFINITY;
  for (const b of buckets) {
    if (b.count > max) max = b.count;
    else if (b.count < max) b.count = max;
  }
}
