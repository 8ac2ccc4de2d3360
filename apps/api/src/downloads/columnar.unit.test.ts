import { Readable } from 'node:stream';
import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import type { PointColumns } from '@meridian/clickhouse';
import { columnarBody } from './columnar.ts';
import { doubleStatistics, int64Statistics } from './parquet-row-group.ts';

const encoder = new TextEncoder();

/** A batch of `perName` rows for each name, in order, with timestamps t0 + row and values row / 7. */
function batch(names: string[], perName: number, t0: number): PointColumns {
  const bytes = names.map((n) => encoder.encode(n));
  const dictionaryOffsets = new Int32Array(names.length + 1);
  bytes.forEach((b, k) => (dictionaryOffsets[k + 1] = dictionaryOffsets[k]! + b.length));
  const dictionaryBytes = new Uint8Array(dictionaryOffsets[names.length]!);
  bytes.forEach((b, k) => dictionaryBytes.set(b, dictionaryOffsets[k]));
  const rows = names.length * perName;
  const nameIndex = Int32Array.from({ length: rows }, (_, i) => Math.floor(i / perName));
  return {
    rows,
    nameIndex,
    dictionaryOffsets,
    dictionaryBytes,
    timestamps: BigInt64Array.from({ length: rows }, (_, i) => BigInt(t0 + i)),
    values: Float64Array.from({ length: rows }, (_, i) => i / 7),
    updatedAt: BigInt64Array.from({ length: rows }, (_, i) => BigInt(t0 + i + 1)),
  };
}

const batches = [batch(['cpu', 'mém ✓'], 3, 1_700_000_000_000), batch(['mém ✓', 'zz'], 2, 1_700_000_001_000)];
const expected = batches.flatMap((b) =>
  Array.from({ length: b.rows }, (_, i) => {
    const k = b.nameIndex[i]!;
    const name = new TextDecoder().decode(b.dictionaryBytes.subarray(b.dictionaryOffsets[k], b.dictionaryOffsets[k + 1]));
    return [name, Number(b.timestamps[i]), b.values[i], Number(b.updatedAt[i])];
  }),
);

async function bytesOf(format: 'arrow' | 'parquet', input: PointColumns[]): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const chunk of columnarBody(format, Readable.from(input)) as AsyncIterable<Buffer>) out.push(chunk);
  return Buffer.concat(out);
}

describe('the columnar encoders', () => {
  it('write an Arrow stream whose batches each replace the names dictionary, read back as the rows', async () => {
    const table = tableFromIPC(await bytesOf('arrow', batches));
    expect(table.schema.fields.map((f) => `${f.name}:${String(f.type)}`)).toEqual([
      'metric_name:Dictionary<Int32, Utf8>',
      'timestamp:Timestamp<MILLISECOND, UTC>',
      'metric_numeric_value:Float64',
      'updated_at:Timestamp<MILLISECOND, UTC>',
    ]);
    expect(table.batches).toHaveLength(2);
    expect([...table].map((r) => [r.metric_name, r.timestamp, r.metric_numeric_value, r.updated_at])).toEqual(expected);
  });

  it('write a Parquet file of a row group a batch, the numbers straight from their bytes, with statistics', async () => {
    const bytes = await bytesOf('parquet', batches);
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
    const meta = parquetMetadata(file);
    expect(meta.row_groups.map((g) => Number(g.num_rows))).toEqual([6, 4]);
    const ts = meta.row_groups[1]!.columns[1]!.meta_data!;
    expect(ts.encodings).toEqual(['PLAIN']);
    expect(ts.statistics).toMatchObject({ null_count: 0n });
    const rows = await parquetReadObjects({ file });
    const ms = (v: unknown) => (v instanceof Date ? v.getTime() : Number(v));
    expect(rows.map((o) => [o.metric_name, ms(o.timestamp), o.metric_numeric_value, ms(o.updated_at)])).toEqual(expected);
  });

  it("write a page's shared dictionary once, before the first of the batches that use it", async () => {
    const page = batch(['cpu', 'mém ✓', 'zz'], 2, 1_700_000_000_000);
    const later = { ...page, nameIndex: page.nameIndex.map((k) => 2 - k), timestamps: page.timestamps.map((t) => t + 1000n) };
    const bytes = await bytesOf('arrow', [page, later]);
    expect(bytes.toString('latin1').split('zz').length - 1).toBe(1);
    const table = tableFromIPC(bytes);
    expect(table.batches).toHaveLength(2);
    expect([...table].map((r) => r.metric_name as string)).toEqual(['cpu', 'cpu', 'mém ✓', 'mém ✓', 'zz', 'zz', 'zz', 'zz', 'mém ✓', 'mém ✓', 'cpu', 'cpu']);
  });

  it('an empty download is a stream and a file that carry the schema', async () => {
    expect(tableFromIPC(await bytesOf('arrow', [])).schema.fields).toHaveLength(4);
    const bytes = await bytesOf('parquet', []);
    expect(parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer).schema).toHaveLength(5);
  });
});

describe('Parquet statistics of typed columns', () => {
  it('int64 min and max exact across the sign and the 32-bit halves; none past 2^53', () => {
    expect(int64Statistics(BigInt64Array.from([5n, -1n, 4_294_967_296n, -4_294_967_297n, 1_700_000_000_123n]))).toEqual({
      min_value: -4_294_967_297n,
      max_value: 1_700_000_000_123n,
      null_count: 0n,
    });
    expect(int64Statistics(BigInt64Array.from([2n ** 60n]))).toBeUndefined();
    expect(int64Statistics(new BigInt64Array(0))).toBeUndefined();
  });

  it('doubles: NaN left out, a zero min is -0 and a zero max +0, none for NaN alone', () => {
    const s = doubleStatistics(Float64Array.from([NaN, 0, 3.5, -0]))!;
    expect(Object.is(s.min_value, -0)).toBe(true);
    expect(s.max_value).toBe(3.5);
    const zeros = doubleStatistics(Float64Array.from([-0, 0]))!;
    expect(Object.is(zeros.max_value, 0)).toBe(true);
    expect(doubleStatistics(Float64Array.from([NaN]))).toBeUndefined();
  });
});
