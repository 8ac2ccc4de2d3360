import { describe, expect, it } from 'vitest';
import type { DomainError } from '../errors.ts';
import { bucketCount, NICE_STEPS_MS, parseSeriesParams, roundStep, seriesWindow, stepForPoints } from './params.ts';

const limits = { maxPoints: 10_000, maxSeries: 3 };
const DAY = 86_400_000;

const problem = (fn: () => unknown): DomainError => {
  try {
    fn();
  } catch (e) {
    return e as DomainError;
  }
  throw new Error('expected a DomainError');
};

describe('the step of a sampled series', () => {
  it('covers four months in at most the points asked for, to their last day', () => {
    const from = Date.UTC(2024, 0, 1);
    const to = Date.UTC(2024, 4, 1) - 1;
    const step = stepForPoints(from, to, 10_000);
    expect(bucketCount(from, to, step)).toBeLessThanOrEqual(10_000);
    // The last bucket holds the range's end: the whole span is drawn, not its first day.
    expect(Math.floor(to / step) * step + step).toBeGreaterThan(to);
    expect(Math.floor(from / step) * step).toBeLessThanOrEqual(from);
    // ...and about as many buckets as asked for, not a handful: the step is the next round one.
    expect(bucketCount(from, to, step)).toBeGreaterThan(10_000 / 3);
    expect(step).toBe(30 * 60_000);
  });

  it('rounds up to a round width, and to whole days past a day', () => {
    expect(roundStep(0.2)).toBe(1);
    expect(roundStep(1)).toBe(1);
    expect(roundStep(61_000)).toBe(120_000);
    expect(roundStep(DAY)).toBe(DAY);
    expect(roundStep(DAY + 1)).toBe(2 * DAY);
    expect(roundStep(10.5 * DAY)).toBe(11 * DAY);
    for (const s of NICE_STEPS_MS) expect(roundStep(s)).toBe(s);
  });

  it('never makes more buckets than asked for, edges included', () => {
    // Ranges that start just before a bucket boundary and end just after one.
    for (const [from, to, points] of [
      [999, 2000, 2],
      [59_999, 120_001, 2],
      [0, 0, 1],
      [5, 5, 1],
      [1, 10, 10],
      [7, 8_000_000_007, 997],
    ] as const) {
      const step = stepForPoints(from, to, points);
      expect(bucketCount(from, to, step), `${from}..${to} in ${points}`).toBeLessThanOrEqual(points);
    }
    // A single instant is one bucket of 1 ms.
    expect(stepForPoints(5, 5, 1000)).toBe(1);
  });

  it('counts epoch-aligned buckets as intDiv(ts, step) groups them', () => {
    expect(bucketCount(0, 9, 10)).toBe(1);
    expect(bucketCount(9, 10, 10)).toBe(2);
    expect(bucketCount(10, 9, 10)).toBe(0);
  });
});

describe('series parameters', () => {
  it('defaults to 1000 points and leaves the range to the data', () => {
    expect(parseSeriesParams({ metrics: 'cpu' }, limits)).toEqual({ metrics: 'cpu', pattern: 'single', fromMs: null, toMs: null, points: 1000, stepMs: null });
    expect(parseSeriesParams({ metrics: 'cpu' }, { maxPoints: 50, maxSeries: 1 }).points).toBe(50);
    expect(parseSeriesParams({ metrics: 'c', pattern: 'contains', start_date: '2024-01-02', step: '60000' }, limits)).toEqual({
      metrics: 'c',
      pattern: 'contains',
      fromMs: Date.UTC(2024, 0, 2),
      toMs: null,
      points: null,
      stepMs: 60_000,
    });
  });

  it('names MERIDIAN_MAX_SERIES_POINTS when points is above it', () => {
    const e = problem(() => parseSeriesParams({ metrics: 'm', points: '10001' }, limits));
    expect(e.code).toBe('validation');
    expect(e.errors).toEqual([{ field: 'points', reason: expect.stringMatching(/at most 10000 \(MERIDIAN_MAX_SERIES_POINTS\)/) }]);
  });

  it('names MERIDIAN_MAX_SERIES_PER_REQUEST when a list is longer, before any lookup', () => {
    const e = problem(() => parseSeriesParams({ metrics: 'a,b,c,d', pattern: 'list' }, limits));
    expect(e.errors[0]).toEqual({ field: 'metrics', reason: expect.stringContaining('MERIDIAN_MAX_SERIES_PER_REQUEST') });
  });

  it('reports every bad parameter at once', () => {
    const e = problem(() => parseSeriesParams({ pattern: 'glob', start_date: 'x', points: '0', step: '1.5' }, limits));
    expect(e.errors.map((x) => x.field)).toEqual(['metrics', 'pattern', 'start_date', 'step', 'points', 'step']);
    expect(problem(() => parseSeriesParams({ metrics: 'm', start_date: '2024-02-02', end_date: '2024-02-01' }, limits)).errors.map((x) => x.field)).toEqual([
      'start_date',
    ]);
    expect(problem(() => parseSeriesParams({ metrics: ['a', 'b'] }, limits)).errors.map((x) => x.field)).toEqual(['metrics', 'metrics']);
  });
});

describe('the window charted', () => {
  const p = (over: Partial<ReturnType<typeof parseSeriesParams>>) => ({ ...parseSeriesParams({ metrics: 'm' }, limits), ...over });
  const extent = { firstMs: Date.UTC(2024, 0, 1), lastMs: Date.UTC(2024, 4, 1) - 1 };

  it('takes the bounds left out from the data', () => {
    expect(seriesWindow(p({}), extent, 1, limits)).toEqual({
      fromMs: extent.firstMs,
      toMs: extent.lastMs,
      stepMs: stepForPoints(extent.firstMs, extent.lastMs, 1000),
    });
    expect(seriesWindow(p({ fromMs: Date.UTC(2024, 3, 1) }), extent, 1, limits)?.fromMs).toBe(Date.UTC(2024, 3, 1));
    // Nothing to chart and no range: null; a range without data: kept as given.
    expect(seriesWindow(p({}), null, 0, limits)).toBeNull();
    expect(seriesWindow(p({ fromMs: 10, toMs: 20 }), null, 0, limits)).toEqual({ fromMs: 10, toMs: 20, stepMs: 1 });
    // A start after the last point: an empty stretch from the start.
    expect(seriesWindow(p({ fromMs: extent.lastMs + 100 }), extent, 1, limits)).toEqual({ fromMs: extent.lastMs + 100, toMs: extent.lastMs + 100, stepMs: 1 });
  });

  it('refuses a step that makes more points than the setting, naming it', () => {
    const e = problem(() => seriesWindow(p({ points: null, stepMs: 1000 }), extent, 1, limits));
    expect(e.code).toBe('validation');
    expect(e.errors[0]).toEqual({ field: 'step', reason: expect.stringContaining('MERIDIAN_MAX_SERIES_POINTS') });
    expect(seriesWindow(p({ points: null, stepMs: DAY }), extent, 1, limits)?.stepMs).toBe(DAY);
  });

  it('refuses a pattern matching more metrics than the setting, naming it', () => {
    const e = problem(() => seriesWindow(p({}), extent, 4, limits));
    expect(e.errors[0]).toEqual({ field: 'metrics', reason: expect.stringContaining('MERIDIAN_MAX_SERIES_PER_REQUEST') });
  });
});
