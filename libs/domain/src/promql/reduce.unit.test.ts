import { describe, expect, it } from 'vitest';
import type { Labels } from '../series/labels.ts';
import { aggregate } from './aggregate.ts';
import type { Aggregate } from './ast.ts';
import { evalRangeFunction, WINDOW_STATS_FUNCTIONS } from './functions.ts';
import { STORE_AGGREGATIONS } from './plan.ts';
import { foldGroups, seriesStepValues } from './reduce.ts';

let seed = 7;
const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;

/** A series of uneven spacing: a counter with resets, or values that go up and down, NaN and infinities included. */
function series(n: number, counter: boolean): { ts: number[]; vs: number[] } {
  const ts: number[] = [];
  const vs: number[] = [];
  let v = 100;
  for (let i = 0, t = 0; i < n; i++) {
    t += 5_000 + Math.floor(rnd() * 20_000);
    v = rnd() < 0.03 ? Math.floor(rnd() * 10) : v + Math.floor(rnd() * 50);
    ts.push(t);
    const odd = rnd();
    vs.push(counter ? v : odd < 0.01 ? Number.NaN : odd < 0.02 ? Number.POSITIVE_INFINITY : Math.round(rnd() * 1e4) / 100 - 20);
  }
  return { ts, vs };
}

describe('range functions reduced per series as the samples arrive', () => {
  // Ranges of whole steps, between steps, and shorter than a step (windows that skip samples).
  it.each([
    [60_000, 300_000],
    [45_000, 300_000],
    [600_000, 120_000],
  ])('give what each window of the samples gives, bit for bit (step %i ms, range %i ms)', (stepMs, rangeMs) => {
    for (const counter of [true, false]) {
      const { ts, vs } = series(500, counter);
      const r = { firstRefMs: ts[0]! - 100_000, stepMs, steps: Math.floor((ts.at(-1)! + 200_000 - ts[0]!) / stepMs), rangeMs };
      for (const func of WINDOW_STATS_FUNCTIONS) {
        const got = seriesStepValues(func, [], ts, vs, r);
        for (let k = 0; k < r.steps; k++) {
          const end = r.firstRefMs + k * stepMs;
          const lo = ts.findIndex((t) => t >= end - rangeMs);
          const hi = ts.findLastIndex((t) => t <= end);
          const want =
            lo < 0 || hi < lo
              ? null
              : evalRangeFunction(func, { ts, vs, lo, hi }, { rangeStartMs: end - rangeMs, rangeEndMs: end, rangeSeconds: rangeMs / 1000 }, Number.NaN);
          expect(got.present[k], `${func} step ${k}`).toBe(want === null ? 0 : 1);
          if (want !== null) expect(got.values[k], `${func} step ${k}`).toBe(want);
        }
      }
    }
  });

  it('reads only the first n samples of arrays reused from a longer series', () => {
    const { ts, vs } = series(300, true);
    const r = { firstRefMs: ts[0]!, stepMs: 60_000, steps: Math.floor((ts[199]! + 400_000 - ts[0]!) / 60_000), rangeMs: 300_000 };
    for (const func of WINDOW_STATS_FUNCTIONS) {
      const want = seriesStepValues(func, [], ts.slice(0, 200), vs.slice(0, 200), r);
      expect(seriesStepValues(func, [], ts, vs, r, 200), func).toEqual(want);
      // The longer arrays give other windows past the 200th sample, so the test can tell.
      expect(seriesStepValues(func, [], ts, vs, r), func).not.toEqual(want);
    }
  });
});

describe('aggregations of reduced series per group', () => {
  it.each(STORE_AGGREGATIONS)('%s gives what the aggregation of each step gives, bit for bit', (op) => {
    const steps = 200;
    const labels: Labels[] = Array.from({ length: 12 }, (_, i) => [['i', String(i)]]);
    const groupOf = labels.map((_, i) => i % 3);
    const groupLabels: Labels[] = [[['g', '0']], [['g', '1']], [['g', '2']]];
    const values = labels.map((l) => {
      const present = new Uint8Array(steps);
      const v = new Float64Array(steps);
      for (let k = 0; k < steps; k++) {
        present[k] = rnd() < 0.8 ? 1 : 0;
        const odd = rnd();
        v[k] = odd < 0.02 ? Number.NaN : odd < 0.04 ? Number.NEGATIVE_INFINITY : odd < 0.06 ? Number.POSITIVE_INFINITY : rnd() * 1e6 - 3e5;
      }
      return { labels: l, present, values: v };
    });
    const folded = foldGroups(op, values, groupOf, groupLabels, steps);
    const e = { kind: 'aggregate', op, grouping: ['g'], without: false, param: null, expr: { kind: 'number', value: 0 } } as unknown as Aggregate;
    for (let k = 0; k < steps; k++) {
      // The same input to aggregate(): each series with its group's label, in the same order.
      const input = values.flatMap((s, i) => (s.present[k] === 1 ? [{ labels: groupLabels[groupOf[i]!]!, v: s.values[k]!, t: k }] : []));
      const want = new Map(aggregate(e, input, Number.NaN, k).map((s) => [s.labels[0]![1], s.v]));
      folded.forEach((g) => {
        const key = g.labels[0]![1];
        expect(g.present[k], `${op} group ${key} step ${k}`).toBe(want.has(key) ? 1 : 0);
        if (want.has(key)) expect(g.values[k], `${op} group ${key} step ${k}`).toBe(want.get(key));
      });
    }
  });
});
