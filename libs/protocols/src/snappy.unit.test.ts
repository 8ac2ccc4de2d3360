import { randomBytes } from 'node:crypto';
import { compressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import { snappyDeclaredLength, snappyUncompressBounded } from './snappy.ts';

/** Bodies that give every element kind: short and long literals (1 to 4 length bytes), copies with 1 and 2 byte offsets, overlapping copies. */
function samples(): Buffer[] {
  const text = Buffer.from(Array.from({ length: 4000 }, (_, i) => `node_cpu_seconds_total{cpu="${i % 8}",mode="idle"} ${i * 1.5}\n`).join(''));
  const noise = randomBytes(200_000); // literals of 65,536 bytes and more: 3 length bytes
  const chunk = randomBytes(30_000);
  const far = Buffer.concat([chunk, randomBytes(20_000), chunk]); // a repeat 50 kB back: a 2-byte offset
  return [Buffer.alloc(0), Buffer.from('a'), Buffer.alloc(100_000, 7), Buffer.from('abcabcabcabcabcabcabcabcabcabc'), text, noise, far];
}

describe('snappyUncompressBounded', () => {
  it('uncompresses what snappy compressed, whatever its elements', () => {
    for (const raw of samples()) {
      const block = compressSync(raw);
      expect(snappyDeclaredLength(block)).toBe(raw.length);
      expect(Buffer.from(snappyUncompressBounded(block, 1 << 20)).equals(raw)).toBe(true);
    }
  });

  it('reads a copy with a 4-byte offset (the format allows it; the snappy compressor never writes one)', () => {
    const block = Buffer.from([9, 3 << 2, ...Buffer.from('abcd'), 3 | (4 << 2), 4, 0, 0, 0]);
    expect(Buffer.from(snappyUncompressBounded(block, 64)).toString()).toBe('abcdabcda');
  });

  it('refuses a block declaring more than the bound (413) before allocating it', () => {
    const bomb = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x04, 0x00, 0x61]); // declares 1 GiB
    expect(() => snappyUncompressBounded(bomb, 1 << 20)).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
  });

  it('refuses forged blocks as malformed (400), never reading or writing out of bounds', () => {
    const forged = [
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), // no end to the preamble
      Buffer.from([10, 0x00 | (20 << 2), 0x61]), // a literal of 21 bytes, 1 present
      Buffer.from([2, 0x00 | (3 << 2), 1, 2, 3, 4]), // a literal past the declared 2
      Buffer.from([8, 0x00, 0x61, 0x01 | (0 << 2), 5]), // a copy 5 back after 1 byte
      Buffer.from([8, 0x00, 0x61, 0x02, 0, 0]), // a copy of offset 0
      Buffer.from([3, 0x00, 0x61, 0x01 | (4 << 2), 1]), // a copy of 8 past the declared 3
      Buffer.from([5, 0x00, 0x61]), // declares 5, holds 1
      Buffer.from([4, 0x00, 0x61, 0x03]), // a 4-byte offset cut short
      Buffer.from([100, 0xf0 | 0x0c, 0x10]), // a literal whose 4-byte length is cut short
    ];
    for (const block of forged)
      expect(() => snappyUncompressBounded(block, 1 << 20), block.toString('hex')).toThrow(expect.objectContaining({ code: 'validation' }));
  });
});
