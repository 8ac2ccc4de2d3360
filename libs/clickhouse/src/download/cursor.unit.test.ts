import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from './cursor.ts';
import type { DownloadCursor } from './types.ts';

const cursor: DownloadCursor = { metric_name: 'cpu:load', ts: 1_700_000_000_123, updated_at: 1_700_000_001_000, partition: 2, offset: 12_345, row: 7 };
const token = (fields: unknown) => Buffer.from(JSON.stringify(fields)).toString('base64url');

describe('download cursor', () => {
  it('round-trips, names with any character included', () => {
    for (const metric_name of ['cpu:load', 'we"ird\\name %_:ü日本🎉', "x'); DROP TABLE points; --", ' ']) {
      const c = { ...cursor, metric_name };
      const encoded = encodeCursor(c);
      expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/); // base64url: safe in a header and a query string
      expect(decodeCursor(encoded)).toEqual(c);
    }
  });

  it('keeps the extremes of every field', () => {
    const c = { metric_name: 'm', ts: 0, updated_at: Number.MAX_SAFE_INTEGER, partition: 65_535, offset: Number.MAX_SAFE_INTEGER, row: 4_294_967_295 };
    expect(decodeCursor(encodeCursor(c))).toEqual(c);
  });

  it.each([
    ['empty', ''],
    ['not base64url', 'abc+/='],
    ['not JSON', Buffer.from('{oops').toString('base64url')],
    ['an object', token({ metric_name: 'm' })],
    ['another version', token([2, 'm', 1, 1, 0, 0, 0])],
    ['too few fields', token([1, 'm', 1, 1, 0, 0])],
    ['too many fields', token([1, 'm', 1, 1, 0, 0, 0, 0])],
    ['an empty name', token([1, '', 1, 1, 0, 0, 0])],
    ['a number as name', token([1, 5, 1, 1, 0, 0, 0])],
    ['a fractional ts', token([1, 'm', 1.5, 1, 0, 0, 0])],
    ['a ts as string', token([1, 'm', '1', 1, 0, 0, 0])],
    ['an unsafe integer', token([1, 'm', 2 ** 60, 1, 0, 0, 0])],
    ['a partition above UInt16', token([1, 'm', 1, 1, 65_536, 0, 0])],
    ['a negative offset', token([1, 'm', 1, 1, 0, -1, 0])],
    ['a row above UInt32', token([1, 'm', 1, 1, 0, 0, 4_294_967_296])],
    ['null fields', token([1, 'm', null, 1, 0, 0, 0])],
    ['too long', 'A'.repeat(5000)],
  ])('rejects %s', (_why, text) => {
    expect(decodeCursor(text)).toBeNull();
  });
});
