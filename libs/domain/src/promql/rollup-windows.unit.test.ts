import { describe, expect, it } from 'vitest';
import { parsePromql } from './parse.ts';
import { planWindows } from './plan.ts';
import { seriesStepValues } from './reduce.ts';
import { ROLLUP_FUNCTIONS, rollupBucketMs, rollupStepValues, type BucketAggregates } from './rollup-windows.ts';

let seed = 11;
const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const MIN = 60_000;
const HOUR = 3_600_000;

/** Integer values (sums exact in any order), timestamps on whole minutes now and then, a gap of hours. */
function samples(n: number): { ts: number[]; vs: number[] } {
  const ts: number[] = [];
  const vs: number[] = [];
  for (let i = 0, t = 7 * MIN + 13_000; i < n; i++) {
    t += rnd() < 0.2 ? MIN - (t % MIN) : 1_000 + Math.floor(rnd() * 40_000);
    if (i === Math.floor(n / 2)) t += 5 * HOUR;
    ts.push(t);
    vs.push(Math.floor(rnd() * 2000) - 1000);
  }
  return { ts, vs };
}

function bucketsOf(ts: readonly number[], vs: readonly number[], width: number): BucketAggregates[] {
  const out: Array<{ bucket: number; count: number; min: number; max: number; sum: number; last: number }> = [];
  ts.forEach((t, i) => {
    const bucket = Math.floor(t / width) * width;
    const v = vs[i]!;
    const b = out[out.length - 1];
    if (b?.bucket === bucket) Object.assign(b, { count: b.count + 1, min: Math.min(b.min, v), max: Math.max(b.max, v), sum: b.sum + v, last: v });
    else out.push({ bucket, count: 1, min: v, max: v, sum: v, last: v });
  });
  return out;
}

/** The samples a rollup read leaves out: those before the first whole bucket and those at step times. */
function leftOut(ts: readonly number[], vs: readonly number[], fromBucketMs: number, firstRefMs: number, stepMs: number) {
  const keep = ts.map((t, i) => i).filter((i) => ts[i]! < fromBucketMs || (ts[i]! - firstRefMs) % stepMs === 0);
  return { ts: keep.map((i) => ts[i]!), vs: keep.map((i) => vs[i]!) };
}

describe('range functions over rollup buckets', () => {
  it.each([
    [MIN, 10 * MIN, MIN],
    [MIN, 60 * MIN, 5 * MIN],
    [HOUR, HOUR, HOUR],
    [HOUR, 3 * HOUR, HOUR],
    [HOUR, HOUR, 2 * HOUR],
  ])('bucket %i, range %i, step %i: every step as from the samples', (width, rangeMs, stepMs) => {
    const { ts, vs } = samples(3000);
    const steps = Math.floor((ts[ts.length - 1]! + 2 * rangeMs) / stepMs);
    const r = { firstRefMs: 0, stepMs, steps, rangeMs };
    const labels: [string, string][] = [['__name__', 'x']];
    for (const fromBucketMs of [0, Math.ceil(ts[40]! / width) * width]) {
      // As if the raw points before ts[40] were gone (retention) but the rollup kept them.
      const kept = fromBucketMs === 0 ? 0 : 40;
      const raw = { ts: ts.slice(kept), vs: vs.slice(kept) };
      const buckets = bucketsOf(ts, vs, width);
      const out = leftOut(raw.ts, raw.vs, fromBucketMs, 0, stepMs);
      for (const func of ROLLUP_FUNCTIONS) {
        const want = seriesStepValues(func, labels, raw.ts, raw.vs, r);
        const got = rollupStepValues(func, { labels, buckets, fromBucketMs, ...out }, r);
        expect([...got.present], func).toEqual([...want.present]);
        for (let k = 0; k < steps; k++) {
          if (want.present[k] !== 1) continue;
          expect(got.values[k], `${func} step ${k}`).toBe(want.values[k]);
        }
      }
    }
  });

  it('takes a rollup only for whole buckets of a function it answers, at or past the least range', () => {
    const r = (firstRefMs: number, stepMs: number, steps = 10) => ({ firstRefMs, stepMs, steps });
    expect(rollupBucketMs('max_over_time', HOUR, r(5 * HOUR, HOUR), HOUR)).toBe(HOUR);
    expect(rollupBucketMs('max_over_time', HOUR, r(5 * HOUR, MIN), HOUR)).toBe(MIN);
    expect(rollupBucketMs('max_over_time', HOUR, r(5 * HOUR + 1000, HOUR), HOUR)).toBeNull();
    expect(rollupBucketMs('max_over_time', HOUR, r(5 * HOUR, 90_000), HOUR)).toBeNull();
    expect(rollupBucketMs('max_over_time', HOUR, r(5 * HOUR + 1000, 90_000, 1), HOUR)).toBeNull();
    expect(rollupBucketMs('max_over_time', 90 * MIN, r(5 * HOUR, HOUR), HOUR)).toBe(MIN);
    expect(rollupBucketMs('max_over_time', 30 * MIN, r(5 * HOUR, HOUR), HOUR)).toBeNull();
    expect(rollupBucketMs('max_over_time', HOUR, r(5 * HOUR, HOUR), null)).toBeNull();
    expect(rollupBucketMs('rate', HOUR, r(5 * HOUR, HOUR), HOUR)).toBeNull();
    expect(rollupBucketMs('count_over_time', HOUR, r(5 * HOUR, 1, 1), HOUR)).toBe(HOUR);
  });

  it('plans a window on a rollup reduced per series even where the reduce ratio would not reduce it', () => {
    const catalog = [
      {
        name: 'temp{room="a"}',
        labels: [
          ['__name__', 'temp'],
          ['room', 'a'],
        ] as [string, string][],
      },
    ];
    const plan = (q: string, start: number, minRange: number | null) =>
      planWindows(
        parsePromql(q),
        catalog,
        start,
        start + 10 * HOUR,
        HOUR,
        300_000,
        null,
        minRange === null ? null : { minRangeMs: minRange, minPointsPerBucket: 0 },
      )[0]!;
    const onRollup = plan('max_over_time(temp[1h] offset 2h)', 5 * HOUR, HOUR);
    expect(onRollup.rollup).toEqual({ bucketMs: HOUR });
    expect(onRollup.reduce).toMatchObject({ func: 'max_over_time', firstRefMs: 3 * HOUR, stepMs: HOUR, steps: 11, rangeMs: HOUR });
    expect(plan('max_over_time(temp[1h])', 5 * HOUR + 1, HOUR)).toMatchObject({ rollup: null, reduce: null });
    expect(plan('max_over_time(temp[1h])', 5 * HOUR, null)).toMatchObject({ rollup: null, reduce: null });
  });

  it('reads sparse series raw: a rollup only where the catalog counts enough points per bucket', () => {
    const withPoints = (points: number) => [
      {
        name: 'temp{room="a"}',
        labels: [
          ['__name__', 'temp'],
          ['room', 'a'],
        ] as [string, string][],
        extent: { points, firstMs: 0, lastMs: 100 * HOUR },
      },
    ];
    const plan = (points: number) =>
      planWindows(parsePromql('max_over_time(temp[1h])'), withPoints(points), 10 * HOUR, 20 * HOUR, HOUR, 300_000, null, {
        minRangeMs: HOUR,
        minPointsPerBucket: 500,
      })[0]!;
    // 11 buckets read over the 11 hours from 9 h to 20 h.
    expect(plan(100 * 600).rollup).toEqual({ bucketMs: HOUR });
    expect(plan(100 * 400).rollup).toBeNull();
  });
});
