import { describe, expect, it } from 'vitest';
import { pointBatch } from '../../../../test/support/point-batch.ts';
import { batchProblem } from './segment.ts';

const batch = pointBatch;

describe('a PointBatch to project', () => {
  it('rejects a batch of several metrics whose indexes do not name one of them for every point', () => {
    const base = batch('t', '', 1, [
      [1, 1],
      [2, 2],
    ]);
    expect(batchProblem({ ...base, names: ['a', 'b'], name_index: [0, 1] })).toBeNull();
    expect(batchProblem({ ...base, names: ['a', 'b'], name_index: [0] })).toMatch(/2 names and 1 name indexes for 2 points/);
    expect(batchProblem({ ...base, names: ['a', 'b'], name_index: [0, 2] })).toMatch(/index 2 is not one of its 2 names/);
    expect(batchProblem({ ...base, names: ['a'], name_index: [0, -1] })).toMatch(/index -1/);
    expect(batchProblem({ ...base, name_index: [0, 0] })).toMatch(/indexes without names/);
  });

  it('rejects batches whose columns disagree or whose times are not integer ms', () => {
    expect(batchProblem(batch('t', 'm', 1, [[1, 2]]))).toBeNull();
    expect(batchProblem({ ...batch('t', 'm', 1, [[1, 2]]), values: [] })).toMatch(/1 timestamps but 0 values/);
    expect(batchProblem(batch('t', 'm', 1, [[1.5, 2]]))).toMatch(/not an integer/);
    expect(batchProblem(batch('t', 'm', 1.5, [[1, 2]]))).toMatch(/updated_at/);
  });
});
