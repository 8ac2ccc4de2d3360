import { describe, expect, it } from 'vitest';
import { evalRangeFunction, evalWindowStats, WINDOW_STATS_FUNCTIONS, type WindowStats } from './functions.ts';

/** A window's reduction computed the way the ClickHouse query does it: each sample paired with the one before it. */
function reduce(ts: number[], vs: number[], lo: number, hi: number): WindowStats {
  let drops = 0,
    resets = 0,
    changes = 0,
    sum = 0;
  for (let i = lo + 1; i <= hi; i++) {
    if (vs[i]! < vs[i - 1]!) {
      drops += vs[i - 1]!;
      resets++;
    }
    if (vs[i] !== vs[i - 1]) changes++;
  }
  for (let i = lo; i <= hi; i++) sum += vs[i]!;
  const window = vs.slice(lo, hi + 1);
  return {
    n: hi - lo + 1,
    tFirst: ts[lo]!,
    vFirst: vs[lo]!,
    tLast: ts[hi]!,
    vLast: vs[hi]!,
    tPrev: ts[hi - 1] ?? 0,
    vPrev: vs[hi - 1] ?? 0,
    drops,
    resets,
    changes,
    sum,
    min: Math.min(...window),
    max: Math.max(...window),
  };
}

describe('range functions from a window reduced in the store', () => {
  it('give what the samples give, for every reducible function', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const ts: number[] = [];
    const vs: number[] = [];
    let v = 100;
    for (let i = 0, t = 0; i < 400; i++) {
      t += 10_000 + Math.floor(rnd() * 10_000);
      v = rnd() < 0.03 ? Math.floor(rnd() * 10) : v + Math.floor(rnd() * 50);
      ts.push(t);
      vs.push(rnd() < 0.5 ? v : Math.round(rnd() * 1e4) / 100);
    }
    for (let trial = 0; trial < 300; trial++) {
      const lo = Math.floor(rnd() * 390);
      const hi = Math.min(399, lo + Math.floor(rnd() * 40));
      const bounds = { rangeStartMs: ts[lo]! - Math.floor(rnd() * 30_000), rangeEndMs: ts[hi]! + Math.floor(rnd() * 30_000), rangeSeconds: 300 };
      for (const func of WINDOW_STATS_FUNCTIONS) {
        const fromSamples = evalRangeFunction(func, { ts, vs, lo, hi }, bounds, Number.NaN);
        const fromStats = evalWindowStats(func, reduce(ts, vs, lo, hi), bounds);
        if (fromSamples === null || fromStats === null) expect(fromStats, func).toBe(fromSamples);
        else expect(Math.abs(fromStats - fromSamples), `${func} [${lo}, ${hi}]`).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(fromSamples)));
      }
    }
  });
});
