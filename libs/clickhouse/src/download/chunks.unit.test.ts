import { describe, expect, it } from 'vitest';
import { byteOrder, chunkNames, rowsInWindow } from './chunks.ts';

describe('download chunks', () => {
  it('orders names as ClickHouse compares Strings: bytes of UTF-8, not UTF-16 units', () => {
    // U+FF5E (3 UTF-8 bytes, EF BD 9E) sorts before U+1F600 (F0 ...) bytewise, after it in UTF-16 units.
    expect(['😀', '～', 'b', 'B', 'a,b'].sort(byteOrder)).toEqual(['B', 'a,b', 'b', '～', '😀']);
  });

  it('groups consecutive names, small first, growing at most fourfold up to the maximum', () => {
    const names = Array.from({ length: 40 }, (_, i) => `m${String(i).padStart(2, '0')}`);
    const groups = chunkNames([...names].reverse(), () => 10, { firstRows: 20, maxRows: 100 });
    expect(groups.map((g) => g.length)).toEqual([2, 8, 10, 10, 10]);
    expect(groups.flat()).toEqual(names);
  });

  it('never splits a metric, and takes each name once', () => {
    const rows: Record<string, number> = { a: 5, big: 1000, c: 5, d: 5 };
    expect(chunkNames(['d', 'a', 'big', 'c', 'a'], (n) => rows[n]!, { firstRows: 10, maxRows: 40 })).toEqual([
      ['a', 'big'],
      ['c', 'd'],
    ]);
  });

  it('gives one group when everything fits the first', () => {
    expect(chunkNames(['x', 'y'], () => 1, { firstRows: 100, maxRows: 1000 })).toEqual([['x', 'y']]);
    expect(chunkNames([], () => 1, { firstRows: 100, maxRows: 1000 })).toEqual([]);
  });

  it("estimates a metric's rows in a time window as if spread evenly", () => {
    const entry = { points: 1000, first_ts: 0, last_ts: 999 };
    expect(rowsInWindow(entry, 0, 999)).toBe(1000);
    expect(rowsInWindow(entry, -5, 5000)).toBe(1000);
    expect(rowsInWindow(entry, 0, 99)).toBe(100);
    expect(rowsInWindow(entry, 1000, 2000)).toBe(0);
    expect(rowsInWindow({ points: 7, first_ts: 50, last_ts: 50 }, 0, 100)).toBe(7);
    expect(rowsInWindow({ points: 7, first_ts: 50, last_ts: 50 }, 51, 100)).toBe(0);
  });
});
