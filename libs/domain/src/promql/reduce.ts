import type { Labels } from '../series/labels.ts';
import type { StepValues } from './eval.ts';
import { evalRangeFunction, type WindowStatsFunction } from './functions.ts';
import type { StoreAggregateOp } from './plan.ts';

/** The steps of a reduced selector (SampleWindow.reduce): step k's window ends at firstRefMs + k·stepMs and spans rangeMs. */
export type ReduceSteps = { readonly firstRefMs: number; readonly stepMs: number; readonly steps: number; readonly rangeMs: number };

/**
 * A range function's value at every step of one series, computed as its samples arrive so they
 * need not be kept: the window's ends only move forward from step to step, so two cursors find
 * each window in one pass over the samples, and each window's value is evalRangeFunction's, the
 * same arithmetic as the evaluation from the samples (and Prometheus'). The samples are the first
 * n of ts and vs (arrays a reader reuses from series to series may be longer).
 */
export function seriesStepValues(
  func: WindowStatsFunction,
  labels: Labels,
  ts: readonly number[],
  vs: readonly number[],
  r: ReduceSteps,
  n = ts.length,
): StepValues {
  const present = new Uint8Array(r.steps);
  const values = new Float64Array(r.steps);
  // One window and one bounds object moved from step to step: two objects a step were most of
  // a 10M-sample query's young garbage besides the answer's text.
  const window = { ts, vs, lo: 0, hi: -1 };
  const bounds = { rangeStartMs: 0, rangeEndMs: 0, rangeSeconds: r.rangeMs / 1000 };
  let lo = 0;
  let hi = -1;
  for (let k = 0; k < r.steps; k++) {
    const end = r.firstRefMs + k * r.stepMs;
    const start = end - r.rangeMs;
    while (lo < n && ts[lo]! < start) lo++;
    while (hi + 1 < n && ts[hi + 1]! <= end) hi++;
    if (hi < lo) continue;
    window.lo = lo;
    window.hi = hi;
    bounds.rangeStartMs = start;
    bounds.rangeEndMs = end;
    const v = evalRangeFunction(func, window, bounds, Number.NaN);
    if (v === null) continue;
    present[k] = 1;
    values[k] = v;
  }
  return { labels, present, values };
}

/**
 * sum, avg, min, max or count of the series' values per group and step (groupOf: each series'
 * group), the series taken in the order given (the evaluation's: sorted by labels), with the
 * float operations of aggregate.ts in the same order, so the same floats. Kept in typed arrays:
 * a step's vector of a thousand series is never built.
 */
export function foldGroups(
  op: StoreAggregateOp,
  series: readonly StepValues[],
  groupOf: readonly number[],
  groupLabels: readonly Labels[],
  steps: number,
): StepValues[] {
  const groups = groupLabels.map((labels) => ({ labels, present: new Uint8Array(steps), values: new Float64Array(steps), counts: new Float64Array(steps) }));
  series.forEach((s, i) => {
    const g = groups[groupOf[i]!]!;
    for (let k = 0; k < steps; k++) {
      if (s.present[k] !== 1) continue;
      const v = s.values[k]!;
      if (g.present[k] !== 1) {
        g.present[k] = 1;
        g.values[k] = v;
        g.counts[k] = 1;
        continue;
      }
      const count = g.counts[k]! + 1;
      g.counts[k] = count;
      g.values[k] = step(op, g.values[k]!, count, v);
    }
  });
  return groups.map(({ labels, present, values, counts }) => ({ labels, present, values: op === 'count' ? counts : values }));
}

/** One more value into a group's: `acc` is the sum, the running mean, the least or the greatest; count includes v. */
function step(op: StoreAggregateOp, acc: number, count: number, v: number): number {
  switch (op) {
    case 'sum':
      return acc + v;
    case 'avg':
      // As Prometheus: an infinite mean stays unless v is NaN or the other infinity.
      if (!Number.isFinite(acc) && !Number.isNaN(acc)) {
        if (!Number.isFinite(v) && !Number.isNaN(v) && acc > 0 === v > 0) return acc;
        if (Number.isFinite(v)) return acc;
      }
      return acc + (v / count - acc / count);
    case 'min':
      return acc > v || Number.isNaN(acc) ? v : acc;
    case 'max':
      return acc < v || Number.isNaN(acc) ? v : acc;
    case 'count':
      return acc;
    default: {
      const never: never = op;
      return never;
    }
  }
}
