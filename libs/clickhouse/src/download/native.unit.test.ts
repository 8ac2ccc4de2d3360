import { describe, expect, it } from 'vitest';
import { COLUMNAR_SELECT, nameOf, nativePointColumns, type PointColumns } from './native.ts';

type Point = [name: string, ts: number, value: number, updatedAt: number];
const NAMES = ['cpu:a', 'm0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'mémoire ✓'];

const varint = (n: number) => {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  return [...out, n];
};
const text = (s: string) => Buffer.concat([Buffer.from(varint(Buffer.byteLength(s))), Buffer.from(s)]);

/** A Native block as ClickHouse writes the columnar download's query: each column's name, type and values, one column after the other. */
function block(points: Point[], columns: ReadonlyArray<readonly [string, string]> = COLUMNAR_SELECT): Buffer {
  const n = points.length;
  const names = Buffer.alloc(n * 4);
  const ts = Buffer.alloc(n * 8);
  const values = Buffer.alloc(n * 8);
  const updated = Buffer.alloc(n * 8);
  points.forEach(([name, t, v, u], i) => {
    names.writeInt32LE(NAMES.indexOf(name), i * 4);
    ts.writeBigInt64LE(BigInt(t), i * 8);
    values.writeDoubleLE(v, i * 8);
    updated.writeBigInt64LE(BigInt(u), i * 8);
  });
  const data = [names, ts, values, updated];
  return Buffer.concat([Buffer.from([...varint(columns.length), ...varint(n)]), ...columns.flatMap(([c, type], k) => [text(c), text(type), data[k]!])]);
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
  const first: Point[] = [
    ['cpu:a', 1_700_000_000_000, 0.5, 1_700_000_000_123],
    ['cpu:a', 1_700_000_001_000, -1e300, 1],
    ['mémoire ✓', 0, 5e-324, 4_102_444_799_999],
  ];
  const second: Point[] = Array.from({ length: 1000 }, (_, i) => [`m${i % 7}`, i * 1000, i / 3, i]);
  const bytes = Buffer.concat([block(first), block([]), block(second)]);

  it('gives a batch per block with rows, the same rows whatever the chunks the bytes arrive in', async () => {
    const whole = await rowsOf(
      nativePointColumns(
        chunked(bytes, () => bytes.length),
        NAMES,
      ),
    );
    expect(whole.sizes).toEqual([3, 1000]);
    expect(whole.rows).toEqual([...first, ...second]);
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 97;
    for (const sizes of [() => 1, () => 13, random]) {
      expect(await rowsOf(nativePointColumns(chunked(bytes, sizes), NAMES))).toEqual(whole);
    }
  });

  it('refuses a stream that ends inside a block, and a block of other columns', async () => {
    await expect(
      rowsOf(
        nativePointColumns(
          chunked(bytes.subarray(0, bytes.length - 5), () => 100),
          NAMES,
        ),
      ),
    ).rejects.toThrow(/ended inside a block/);
    const other = block([['m1', 1, 1, 1]], [...COLUMNAR_SELECT.slice(0, 3), ['task_id', 'String']]);
    await expect(
      rowsOf(
        nativePointColumns(
          chunked(other, () => 1000),
          NAMES,
        ),
      ),
    ).rejects.toThrow(/task_id String where updated_at Int64 belongs/);
    await expect(
      rowsOf(
        nativePointColumns(
          chunked(block([['m1', 1, 1, 1]]), () => 1000),
          ['cpu:a'],
        ),
      ),
    ).rejects.toThrow(/outside the page's 1 names/);
  });
});
