import { describe, expect, it } from 'vitest';
import { batchKey, PointBatcher, pointBatchOf, type ColumnBatch } from './batcher.ts';

const partitionOf = (name: string) => Number(name.split('.')[0]);

function feed(batcher: PointBatcher, points: Array<[string, number]>): ColumnBatch[] {
  const out: ColumnBatch[] = [];
  for (const [name, ts] of points) out.push(...batcher.add(name, ts, ts / 10));
  return [...out, ...batcher.drain()];
}

describe('the point batcher', () => {
  it('batches per metric without a partition rule', () => {
    const batches = feed(new PointBatcher(100, 1000), [
      ['a', 1],
      ['b', 2],
      ['a', 3],
    ]);
    expect(batches).toEqual([
      { names: ['a'], nameIndex: [], timestamps: [1, 3], values: [0.1, 0.3] },
      { names: ['b'], nameIndex: [], timestamps: [2], values: [0.2] },
    ]);
  });

  it('batches a time-major input per partition, each batch naming its metrics once and each point by index', () => {
    // 4 metrics over 2 partitions, every metric at one timestamp, then the next.
    const points: Array<[string, number]> = [];
    for (let t = 1; t <= 3; t++) for (const m of ['0.a', '1.b', '0.c', '1.d']) points.push([m, t]);
    const batches = feed(new PointBatcher(100, 1000, partitionOf), points);
    expect(batches).toEqual([
      { names: ['0.a', '0.c'], nameIndex: [0, 1, 0, 1, 0, 1], timestamps: [1, 1, 2, 2, 3, 3], values: [0.1, 0.1, 0.2, 0.2, 0.3, 0.3] },
      { names: ['1.b', '1.d'], nameIndex: [0, 1, 0, 1, 0, 1], timestamps: [1, 1, 2, 2, 3, 3], values: [0.1, 0.1, 0.2, 0.2, 0.3, 0.3] },
    ]);
    expect(batches.map(batchKey)).toEqual(['0.a', '1.b']);
  });

  it("hands out a partition's batch when it is full, and the largest when too many points wait", () => {
    const full = new PointBatcher(2, 1000, partitionOf);
    expect(full.add('0.a', 1, 0)).toEqual([]);
    expect(full.add('0.b', 2, 0)).toEqual([{ names: ['0.a', '0.b'], nameIndex: [0, 1], timestamps: [1, 2], values: [0, 0] }]);
    const crowded = new PointBatcher(100, 2, partitionOf);
    crowded.add('0.a', 1, 0);
    crowded.add('1.a', 2, 0);
    expect(crowded.add('1.b', 3, 0)).toEqual([{ names: ['1.a', '1.b'], nameIndex: [0, 1], timestamps: [2, 3], values: [0, 0] }]);
  });

  it('writes a batch of one metric by its name alone, and one of several with their indexes', () => {
    expect(pointBatchOf('t', 5, { names: ['a'], nameIndex: [], timestamps: [1], values: [2] })).toEqual({
      type: 'PointBatch',
      task_id: 't',
      metric_name: 'a',
      updated_at: 5,
      timestamps: [1],
      values: [2],
    });
    expect(pointBatchOf('t', 5, { names: ['a', 'b'], nameIndex: [1, 0], timestamps: [1, 2], values: [2, 3] }, '00ff00ff00ff00ff')).toEqual({
      type: 'PointBatch',
      task_id: 't',
      metric_name: '',
      names: ['a', 'b'],
      name_index: [1, 0],
      updated_at: 5,
      timestamps: [1, 2],
      values: [2, 3],
      stage: '00ff00ff00ff00ff',
    });
  });
});
