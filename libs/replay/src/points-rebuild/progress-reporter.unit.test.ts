import { describe, expect, it } from 'vitest';
import type { LogRanges } from '@meridian/domain';
import type { RebuildProgress } from '../progress.ts';
import { progressReporter } from './progress-reporter.ts';

describe('rebuild progress reporter', () => {
  it('reports at most every progressEveryMs unless forced, with what is left of the ranges', () => {
    const seen: RebuildProgress[] = [];
    const position = new Map([[0, 4]]);
    const counts = { events: 4, points: 40 };
    const report = progressReporter(
      { log: {} as LogRanges, topic: 'points', onProgress: (p) => seen.push(p), progressEveryMs: 3_600_000 },
      [{ topic: 'points', partition: 0, start: 0, end: 10 }],
      position,
      10,
      counts,
      performance.now(),
    );
    report(true);
    position.set(0, 8);
    report();
    expect(seen.map((p) => p.remaining)).toEqual([6]);
    counts.events = 8;
    report(true);
    expect(seen.map((p) => [p.events, p.remaining, p.total, p.lag])).toEqual([
      [4, 6, 10, null],
      [8, 2, 10, null],
    ]);
  });
});
