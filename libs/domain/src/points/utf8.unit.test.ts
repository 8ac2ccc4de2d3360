import { describe, expect, it } from 'vitest';
import { firstInvalidUtf8Offset, Utf8Decoder } from './utf8.ts';

describe('firstInvalidUtf8Offset', () => {
  it.each<[string, number[], number]>([
    ['ASCII', [0x61, 0x62], 2],
    ['2, 3 and 4-byte characters', [0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80], 9],
    ['an incomplete character at the end is not (yet) invalid', [0x61, 0xf0, 0x9f, 0x98], 4],
    ['a stray continuation byte', [0x61, 0x80], 1],
    ['0xFF', [0x61, 0x62, 0xff], 2],
    ['an overlong 2-byte form', [0xc0, 0x80], 0],
    ['an overlong 3-byte form', [0x61, 0xe0, 0x80, 0x80], 1],
    ['an overlong 4-byte form', [0xf0, 0x80, 0x80, 0x80], 0],
    ['a UTF-16 surrogate', [0xed, 0xa0, 0x80], 0],
    ['above U+10FFFF', [0xf4, 0x90, 0x80, 0x80], 0],
    ['a lead byte followed by ASCII', [0xc3, 0x61], 0],
  ])('%s', (_name, bytes, offset) => {
    expect(firstInvalidUtf8Offset(new Uint8Array(bytes))).toBe(offset);
  });
});

describe('Utf8Decoder', () => {
  it('returns the valid text before an invalid byte, across chunks', () => {
    const d = new Utf8Decoder();
    expect(d.decode(new Uint8Array([0x61, 0xe2, 0x82]))).toEqual({ text: 'a', invalid: false });
    expect(d.decode(new Uint8Array([0xac, 0x62, 0xc3]))).toEqual({ text: '€b', invalid: false });
    expect(d.decode(new Uint8Array([0xa9, 0x63, 0xff, 0x64]))).toEqual({ text: 'éc', invalid: true });
  });

  it('drops a leading BOM only, also when the error is in the chunk that completes it', () => {
    const d = new Utf8Decoder();
    expect(d.decode(new Uint8Array([0xef, 0xbb]))).toEqual({ text: '', invalid: false });
    expect(d.decode(new Uint8Array([0xbf, 0x61, 0xff]))).toEqual({ text: 'a', invalid: true });
    const e = new Utf8Decoder();
    expect(e.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0xef, 0xbb]))).toEqual({ text: 'a', invalid: false });
    expect(e.decode(new Uint8Array([0xbf, 0xff]))).toEqual({ text: '\uFEFF', invalid: true });
  });

  it('reports an input that ends inside a character', () => {
    const d = new Utf8Decoder();
    expect(d.decode(new Uint8Array([0x61, 0xf0, 0x9f]))).toEqual({ text: 'a', invalid: false });
    expect(d.end()).toEqual({ text: '', invalid: true });
  });
});
