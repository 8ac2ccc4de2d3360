import { describe, expect, it } from 'vitest';
import { batchBytes, nameBytes, pointsWithin } from './batch-bytes.ts';
import { batchKey, PointBatcher, pointBatchOf, type ColumnBatch } from './batcher.ts';

const partitionOf = (name: string) => Number(name.split('.')[0]);

function feed(batcher: PointBatcher, points: Array<[string, number]>): ColumnBatch[] {
  const out: ColumnBatch[] = [];
  for (const [name, ts] of points) out.push(...batcher.add(name, ts, ts / 10));
  return [...out, ...batcher.drain()];
}

describe('the point batcher', () => {
  it('batches per metric without a partition rule', () => {
    const batches = feed(new PointBatcher({ points: 100, bytes: 921_600 }, 1000), [
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
    const batches = feed(new PointBatcher({ points: 100, bytes: 921_600 }, 1000, partitionOf), points);
    expect(batches).toEqual([
      { names: ['0.a', '0.c'], nameIndex: [0, 1, 0, 1, 0, 1], timestamps: [1, 1, 2, 2, 3, 3], values: [0.1, 0.1, 0.2, 0.2, 0.3, 0.3] },
      { names: ['1.b', '1.d'], nameIndex: [0, 1, 0, 1, 0, 1], timestamps: [1, 1, 2, 2, 3, 3], values: [0.1, 0.1, 0.2, 0.2, 0.3, 0.3] },
    ]);
    expect(batches.map(batchKey)).toEqual(['0.a', '1.b']);
  });

  it("hands out a partition's batch when it is full, and the largest when too many points wait", () => {
    const full = new PointBatcher({ points: 2, bytes: 921_600 }, 1000, partitionOf);
    expect(full.add('0.a', 1, 0)).toEqual([]);
    expect(full.add('0.b', 2, 0)).toEqual([{ names: ['0.a', '0.b'], nameIndex: [0, 1], timestamps: [1, 2], values: [0, 0] }]);
    const crowded = new PointBatcher({ points: 100, bytes: 921_600 }, 2, partitionOf);
    crowded.add('0.a', 1, 0);
    crowded.add('1.a', 2, 0);
    expect(crowded.add('1.b', 3, 0)).toEqual([{ names: ['1.a', '1.b'], nameIndex: [0, 1], timestamps: [2, 3], values: [0, 0] }]);
  });

  it('cuts a batch before a point that could take it past its bytes, whatever its names, and keeps every point in order', () => {
    const BYTES = 65_536;
    // 400 metrics of 250 characters over 2 partitions, time-major: one batch a partition by points, about 50 KB of names each.
    const names = Array.from({ length: 400 }, (_, m) => `${m % 2}.${String(m).padStart(248, 'n')}`);
    const points: Array<[string, number]> = [];
    for (let t = 1; t <= 3; t++) for (const name of names) points.push([name, t]);
    const batches = feed(new PointBatcher({ points: 100_000, bytes: BYTES }, Number.MAX_SAFE_INTEGER, partitionOf), points);
    expect(batches.length).toBeGreaterThan(2);
    for (const b of batches) {
      const estimate = batchBytes(
        b.names.reduce((n, name) => n + nameBytes(name), 0),
        b.names.length,
        b.timestamps.length,
      );
      expect(estimate).toBeLessThanOrEqual(BYTES);
    }
    const back = batches.flatMap((b) => b.timestamps.map((ts, i) => [b.names[b.names.length === 1 ? 0 : b.nameIndex[i]!]!, ts] as [string, number]));
    for (const partition of ['0', '1'])
      expect(back.filter(([name]) => name.startsWith(partition))).toEqual(points.filter(([name]) => name.startsWith(partition)));
  });

  it('fills a batch to exactly the points its bytes allow, for one metric and for two taking turns', () => {
    const BYTES = 65_536;
    const one = feed(
      new PointBatcher({ points: 100_000, bytes: BYTES }, Number.MAX_SAFE_INTEGER),
      Array.from({ length: 10_000 }, (_, t) => ['a', t] as [string, number]),
    );
    const full = pointsWithin(BYTES, nameBytes('a'), 1, 0);
    expect(one.slice(0, -1).map((b) => b.timestamps.length)).toEqual(Array.from({ length: Math.floor(10_000 / full) }, () => full));
    const turns = feed(
      new PointBatcher({ points: 100_000, bytes: BYTES }, Number.MAX_SAFE_INTEGER, () => 0),
      Array.from({ length: 10_000 }, (_, t) => [t % 2 === 0 ? 'a' : 'b', t] as [string, number]),
    );
    // The first batch holds one point of 'a' alone, then both names: its room is worked out again when 'b' joins.
    const both = pointsWithin(BYTES, nameBytes('a') + nameBytes('b'), 2, 0);
    expect(turns.slice(0, -1).map((b) => b.timestamps.length)).toEqual(Array.from({ length: Math.floor(10_000 / both) }, () => both));
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
