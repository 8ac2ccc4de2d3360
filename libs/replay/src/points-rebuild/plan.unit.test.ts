import { describe, expect, it } from 'vitest';
import { planRanges } from './plan.ts';

describe('rebuild plan', () => {
  it('starts at the first offset, or after the table position when further; a partition with nothing left has no range', () => {
    const sinkMax = new Map<number, number>();
    const projection = { setSinkMax: (p: number, o: number) => void sinkMax.set(p, o) };
    const starts = new Map([
      [0, 10],
      [1, 0],
      [2, 0],
    ]);
    const ends = new Map([
      [0, 20],
      [1, 30],
      [2, 5],
    ]);
    const stored = new Map([
      [1, 14],
      [2, 7],
    ]);
    const plan = planRanges('points', [0, 1, 2], starts, ends, stored, projection);
    expect(plan.ranges).toEqual([
      { topic: 'points', partition: 0, start: 10, end: 20 },
      { topic: 'points', partition: 1, start: 15, end: 30 },
    ]);
    expect(plan.total).toBe(25);
    expect([...plan.position]).toEqual([
      [0, 10],
      [1, 15],
      [2, 5],
    ]);
    expect([...sinkMax]).toEqual([
      [0, 9],
      [1, 14],
      [2, 7],
    ]);
  });
});
