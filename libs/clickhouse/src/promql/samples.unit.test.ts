import { describe, expect, it } from 'vitest';
import { forEachBinaryRow, ownArrays } from './row-binary.ts';
import { samplesSql } from './samples.ts';
import { mergeScratch, newestPerTimestamp, timeSorted } from './time-order.ts';

describe('PromQL samples', () => {
  it('reads the names from the external table only, the window and the sparse steps as numbers', () => {
    const sql = samplesSql({ fromMs: 1000, toMs: 5000, sparse: { firstRefMs: 2000, stepMs: 600, widthMs: 100 } }, false);
    expect(sql).toContain('metric_name IN (SELECT name FROM names) AND ts >= 1000 AND ts <= 5000');
    expect(sql).toContain('((2000 - ts) % 600 + 600) % 600 <= 100');
    expect(sql).not.toContain('updated_at');
    expect(sql).not.toContain('ORDER BY');
    expect(samplesSql({ fromMs: 1, toMs: 2, sparse: null }, true)).toContain('groupArray(kafka_offset), groupArray(row_in_batch)');
    expect(() => samplesSql({ fromMs: 0.5, toMs: 1, sparse: null }, false)).toThrow(TypeError);
  });

  it('reads RowBinary rows cut anywhere, 64-bit integers exact below 2^53, and refuses a cut row', async () => {
    const row = (id: number, ts: bigint[], vs: number[]) => {
      // Lengths as LEB128: 300 takes two bytes.
      const length = ts.length < 128 ? [ts.length] : [(ts.length & 0x7f) | 0x80, ts.length >> 7];
      const b = Buffer.alloc(4 + 2 * length.length + ts.length * 8 + vs.length * 8);
      let p = b.writeUInt32LE(id, 0);
      for (const byte of length) p = b.writeUInt8(byte, p);
      for (const t of ts) p = b.writeBigInt64LE(t, p);
      for (const byte of length) p = b.writeUInt8(byte, p);
      for (const v of vs) p = b.writeDoubleLE(v, p);
      return b;
    };
    // A shorter row after a longer one: read into the same arrays, it is only their first numbers.
    // A long row across many chunks, after rows joined from a few: the buffer they are joined in grows.
    const long = Array.from({ length: 300 }, (_, i) => i);
    const body = Buffer.concat([
      row(3, [-5n, 2n ** 53n - 1n, 1_700_000_000_123n], [Number.NaN, -0.5, Number.NEGATIVE_INFINITY]),
      row(0, [], []),
      row(
        9,
        long.map(BigInt),
        long.map((i) => i / 4),
      ),
      row(7, [42n], [4.5]),
    ]);
    for (const cut of [1, 3, 7, 20, 1000, body.length]) {
      const chunks = [];
      for (let i = 0; i < body.length; i += cut) chunks.push(body.subarray(i, i + cut));
      const rows: unknown[] = [];
      await forEachBinaryRow(chunks, ['Int64', 'Float64'], (r) => rows.push({ id: r.id, length: r.length, arrays: ownArrays(r) }));
      expect(rows, `chunks of ${cut}`).toEqual([
        {
          id: 3,
          length: 3,
          arrays: [
            [-5, 2 ** 53 - 1, 1_700_000_000_123],
            [Number.NaN, -0.5, Number.NEGATIVE_INFINITY],
          ],
        },
        { id: 0, length: 0, arrays: [[], []] },
        { id: 9, length: 300, arrays: [long, long.map((i) => i / 4)] },
        { id: 7, length: 1, arrays: [[42], [4.5]] },
      ]);
    }
    await expect(forEachBinaryRow([body.subarray(0, body.length - 3)], ['Int64', 'Float64'], () => {})).rejects.toThrow(/ended inside a row/);
  });

  it('merges the runs of a series into time order, stable, and says whether a timestamp repeats', () => {
    expect(timeSorted([1, 2, 3], [10, 20, 30])).toEqual({ ts: [1, 2, 3], vs: [10, 20, 30], n: 3, repeats: false });
    expect(timeSorted([5, 6, 1, 2, 9, 3, 4], [50, 60, 10, 20, 90, 30, 40])).toEqual({
      ts: [1, 2, 3, 4, 5, 6, 9],
      vs: [10, 20, 30, 40, 50, 60, 90],
      n: 7,
      repeats: false,
    });
    expect(timeSorted([3, 4, 1, 3], [1, 2, 3, 4])).toEqual({ ts: [1, 3, 3, 4], vs: [3, 1, 4, 2], n: 4, repeats: true });
    const ts = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1000);
    const sorted = timeSorted(
      ts,
      ts.map((t) => t * 2),
    );
    expect(sorted.ts).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(sorted.vs).toEqual(sorted.ts.map((t) => t * 2));
  });

  it('sorts the first n samples only, with spare arrays reused from series to series', () => {
    const spare = mergeScratch();
    const head = (s: { ts: number[]; vs: number[]; n: number }) => ({ ts: s.ts.slice(0, s.n), vs: s.vs.slice(0, s.n) });
    // Odd and even run counts (the answer in the input's arrays or the spare's), then a shorter series with stale numbers past its end.
    expect(head(timeSorted([5, 6, 1, 2, 9, 3, 4, 0], [50, 60, 10, 20, 90, 30, 40, 0], 8, spare))).toEqual({
      ts: [0, 1, 2, 3, 4, 5, 6, 9],
      vs: [0, 10, 20, 30, 40, 50, 60, 90],
    });
    expect(head(timeSorted([7, 8, 1, 2, 3, 99, 98], [70, 80, 10, 20, 30, 0, 0], 5, spare))).toEqual({ ts: [1, 2, 3, 7, 8], vs: [10, 20, 30, 70, 80] });
    expect(head(timeSorted([4, 2, 3, 1, -1], [40, 20, 30, 10, 0], 4, spare))).toEqual({ ts: [1, 2, 3, 4], vs: [10, 20, 30, 40] });
    expect(timeSorted([2, 2, 1], [1, 2, 3], 2, spare).repeats).toBe(true);
    expect(timeSorted([2, 3, 3], [1, 2, 3], 2, spare).repeats).toBe(false);
  });

  it('keeps the newest row of a repeated timestamp: updated_at, then partition, offset, row in batch', () => {
    const ts = [2000, 1000, 2000, 2000, 1000];
    const vs = [1, 2, 3, 4, 5];
    const updatedAt = [10, 10, 11, 11, 9];
    const partition = [0, 0, 0, 0, 0];
    const offset = [5, 6, 7, 8, 9];
    const rowInBatch = [0, 0, 0, 0, 0];
    expect(newestPerTimestamp(ts, vs, [updatedAt, partition, offset, rowInBatch])).toEqual({ ts: [1000, 2000], vs: [2, 4] });
  });
});
