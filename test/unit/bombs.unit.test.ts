import { createGunzip, gunzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { gzipBomb, rowsBlock } from '../support/bombs.ts';

describe("gzipBomb, the hostile tier's decompression bombs", () => {
  it('expands, through a standard gunzip (CRC and length checked), to head + block × repeats + tail', () => {
    const block = rowsBlock('2024-01-01T00:00:00Z,x\n', 4096);
    const { gzip, expandedBytes } = gzipBomb({ head: '{"values":[', block, repeats: 37, tail: ']}' });
    const expected = Buffer.concat([Buffer.from('{"values":['), ...Array<Buffer>(37).fill(block), Buffer.from(']}')]);
    expect(gunzipSync(gzip).equals(expected)).toBe(true);
    expect(expandedBytes).toBe(expected.length);
  });

  it('compresses a MiB of spaces about a thousandfold, and a stream reads all 64 repeats', async () => {
    const { gzip, expandedBytes } = gzipBomb({ head: '[', block: Buffer.alloc(1 << 20, ' '), repeats: 64, tail: ']' });
    expect(expandedBytes).toBe(64 * 2 ** 20 + 2);
    expect(gzip.length).toBeLessThan(expandedBytes / 900);
    let read = 0;
    for await (const chunk of Readable.from([gzip]).pipe(createGunzip())) read += (chunk as Buffer).length;
    expect(read).toBe(expandedBytes);
  });

  it('rowsBlock holds whole rows only', () => {
    const block = rowsBlock('abc,1\n', 100);
    expect(block.toString()).toBe('abc,1\n'.repeat(16));
  });
});
