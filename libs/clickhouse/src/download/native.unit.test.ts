import { describe, expect, it } from 'vitest';
import type { Segment } from '@meridian/projection';
import { encodePointsBlock } from '../points/native-block.ts';
import { COLUMNAR_SELECT, nameOf, nativePointColumns, type PointColumns } from './native.ts';

const COLUMNS = COLUMNAR_SELECT.map(([name]) => name);

/** A Native block of these points, as ClickHouse writes the columnar download's query. */
function block(points: Array<[name: string, ts: number, value: number, updatedAt: number]>): Buffer {
  const segments: Segment[] = points.map(([name, ts, value, updatedAt], i) => ({
    batch: { type: 'PointBatch', task_id: 't', metric_name: name, updated_at: updatedAt, timestamps: [ts], values: [value] },
    partition: 0,
    offset: i,
  }));
  return encodePointsBlock(segments, undefined, COLUMNS);
}

async function* chunked(bytes: Buffer, sizes: () => number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length;) {
    const n = Math.max(1, sizes());
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

async function rowsOf(batches: AsyncIterable<PointColumns>) {
  const rows: Array<[string, number, number, number]> = [];
  const sizes: number[] = [];
  for await (const b of batches) {
    sizes.push(b.rows);
    for (let i = 0; i < b.rows; i++) {
      rows.push([nameOf(b, i), Number(b.timestamps[i]), b.values[i]!, Number(b.updatedAt[i])]);
    }
  }
  return { rows, sizes };
}

describe('the columnar download decoder', () => {
  const first: Array<[string, number, number, number]> = [
    ['cpu:a', 1_700_000_000_000, 0.5, 1_700_000_000_123],
    ['cpu:a', 1_700_000_001_000, -1e300, 1],
    ['mémoire ✓', 0, 5e-324, 4_102_444_799_999],
  ];
  const second: Array<[string, number, number, number]> = Array.from({ length: 1000 }, (_, i) => [`m${i % 7}`, i * 1000, i / 3, i]);
  const bytes = Buffer.concat([block(first), block([]), block(second)]);

  it('gives a batch per block with rows, the same rows whatever the chunks the bytes arrive in', async () => {
    const whole = await rowsOf(nativePointColumns(chunked(bytes, () => bytes.length)));
    expect(whole.sizes).toEqual([3, 1000]);
    expect(whole.rows).toEqual([...first, ...second]);
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 97;
    for (const sizes of [() => 1, () => 13, random]) {
      expect(await rowsOf(nativePointColumns(chunked(bytes, sizes)))).toEqual(whole);
    }
  });

  it('refuses a stream that ends inside a block, and a block of other columns', async () => {
    await expect(rowsOf(nativePointColumns(chunked(bytes.subarray(0, bytes.length - 5), () => 100)))).rejects.toThrow(/ended inside a block/);
    const other = encodePointsBlock(
      [{ batch: { type: 'PointBatch', task_id: 't', metric_name: 'x', updated_at: 1, timestamps: [1], values: [1] }, partition: 0, offset: 0 }],
      undefined,
      ['metric_name', 'ts', 'value', 'task_id'],
    );
    await expect(rowsOf(nativePointColumns(chunked(other, () => 1000)))).rejects.toThrow(/task_id String where updated_at Int64 belongs/);
  });
});
