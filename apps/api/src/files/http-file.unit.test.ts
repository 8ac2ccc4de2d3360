import { describe, expect, it } from 'vitest';
import { contentDisposition, ifRangeHolds, noneMatchHits, parseRange } from './http-file.ts';

describe('Content-Disposition', () => {
  it.each([
    ['report.csv', `attachment; filename="report.csv"; filename*=UTF-8''report.csv`],
    ['résumé 2024.csv', `attachment; filename="resume 2024.csv"; filename*=UTF-8''r%C3%A9sum%C3%A9%202024.csv`],
    ['say "hi".txt', `attachment; filename="say _hi_.txt"; filename*=UTF-8''say%20%22hi%22.txt`],
    ['../../etc/passwd', `attachment; filename="passwd"; filename*=UTF-8''passwd`],
    ['C:\\temp\\a.txt', `attachment; filename="a.txt"; filename*=UTF-8''a.txt`],
    ['a\r\nSet-Cookie: x=1', `attachment; filename="aSet-Cookie: x=1"; filename*=UTF-8''aSet-Cookie%3A%20x%3D1`],
    ["it's (1)*.csv", `attachment; filename="it's (1)*.csv"; filename*=UTF-8''it%27s%20%281%29%2A.csv`],
    ['100%.txt', `attachment; filename="100_.txt"; filename*=UTF-8''100%25.txt`],
    ['rapport "été" ✓.csv', `attachment; filename="rapport _ete_ _.csv"; filename*=UTF-8''rapport%20%22%C3%A9t%C3%A9%22%20%E2%9C%93.csv`],
    ['数据.csv', `attachment; filename="__.csv"; filename*=UTF-8''%E6%95%B0%E6%8D%AE.csv`],
  ])('%j → %s', (name, expected) => {
    const header = contentDisposition(name);
    expect(header).toBe(expected);
    expect(header).toMatch(/^[\x20-\x7e]+$/); // always a valid header value
  });
});

describe('entity tags', () => {
  const etag = '"abc"';
  it.each([
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['*', true],
    ['"abcd"', false],
    ['abc', false],
    ['', false],
  ])('If-None-Match %j → %s', (header, hit) => expect(noneMatchHits(header, etag)).toBe(hit));
  it('If-Range needs the exact strong tag', () => {
    expect(ifRangeHolds(undefined, etag)).toBe(true);
    expect(ifRangeHolds('"abc"', etag)).toBe(true);
    expect(ifRangeHolds('W/"abc"', etag)).toBe(false);
    expect(ifRangeHolds('Tue, 01 Jan 2024 00:00:00 GMT', etag)).toBe(false);
  });
});

describe('Range', () => {
  it.each([
    [undefined, { kind: 'whole' }],
    ['bytes=0-99', { kind: 'range', start: 0, end: 99 }],
    ['bytes=10-', { kind: 'range', start: 10, end: 999 }],
    ['bytes=-100', { kind: 'range', start: 900, end: 999 }],
    ['bytes=-5000', { kind: 'range', start: 0, end: 999 }],
    ['bytes=990-5000', { kind: 'range', start: 990, end: 999 }],
    ['bytes=1000-', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    ['bytes=0-1,5-6', { kind: 'whole' }],
    ['bytes=5-1', { kind: 'whole' }],
    ['items=0-1', { kind: 'whole' }],
    ['bytes=abc', { kind: 'whole' }],
  ])('%j on 1000 bytes → %j', (header, expected) => expect(parseRange(header, 1000)).toEqual(expected));
  it('nothing of an empty file can be ranged', () => expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' }));
});
