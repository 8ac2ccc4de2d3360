import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compressSegment, decodeRecords, decompressSegment, encodeRecords } from './segment.ts';
import { chainOf, parseRef, segmentKey } from './archive-index.ts';

const record = (offset: number, extra: Partial<{ key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | Buffer[]> }> = {}) => ({
  offset: String(offset),
  timestamp: String(1_700_000_000_000 + offset),
  key: Buffer.from(`k${offset}`),
  value: Buffer.from(`v${offset}`),
  headers: {},
  ...extra,
});

describe('archive segments', () => {
  it('round-trip records byte for byte through the framing and zstd: null keys and values, repeated and empty headers, offsets past 2^32', async () => {
    const records = [
      record(0),
      record(1, { key: null, value: null }),
      record(2, { headers: { type: Buffer.from('PointsBatch'), multi: [Buffer.from('a'), Buffer.from('')], é: Buffer.alloc(0) } }),
      record(2 ** 40, { value: Buffer.alloc(70_000, 7) }),
    ];
    const back = decodeRecords(await decompressSegment(await compressSegment(encodeRecords(records))));
    expect(back).toEqual(records);
    expect(decodeRecords(encodeRecords([]))).toEqual([]);
  });

  it('read back segments an archiver stored at zstd level 3 (before level 9) byte for byte', async () => {
    const records = [record(0), record(1, { value: Buffer.alloc(5000, 3) })];
    const raw = encodeRecords(records);
    const before = zlib.zstdCompressSync(raw, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } });
    expect(await decompressSegment(before)).toEqual(raw);
    expect(decodeRecords(await decompressSegment(before))).toEqual(records);
  });

  it('refuse another format and a cut segment', () => {
    const raw = encodeRecords([record(5), record(6)]);
    expect(() => decodeRecords(Buffer.from('MRDSEG2\n'))).toThrow('format 1');
    for (const at of [raw.length - 1, raw.length - 3, 20]) expect(() => decodeRecords(raw.subarray(0, at)), `cut at ${at}`).toThrow('cut short');
  });
});

describe('the archive index', () => {
  const ref = (first: number, end: number) => ({ partition: 3, first, end });

  it('names a segment by partition and offset range, and reads the name back', () => {
    const key = segmentKey('p.points', ref(10, 2 ** 40));
    expect(key).toBe('_archive/p.points/segments/3/00000000000000000010-00000001099511627776.zst');
    expect(parseRef(key)).toEqual(ref(10, 2 ** 40));
    expect(parseRef('_archive/p.points/segments/3/x.zst')).toBeNull();
  });

  it('chains segments from the first, the furthest-reaching at each position, and stops at a gap', () => {
    expect(chainOf([])).toEqual([]);
    expect(chainOf([ref(10, 20), ref(0, 10), ref(20, 30)])).toEqual([ref(0, 10), ref(10, 20), ref(20, 30)]);
    // Two archivers raced: [0, 10) and [0, 15), then [15, 20) and [10, 20).
    expect(chainOf([ref(0, 10), ref(0, 15), ref(10, 20), ref(15, 20)])).toEqual([ref(0, 15), ref(10, 20)]);
    // A gap: what lies after it is not part of the archive.
    expect(chainOf([ref(0, 10), ref(11, 20)])).toEqual([ref(0, 10)]);
  });
});
