import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { UploadLimitExceeded } from './limits.ts';
import { gunzipIfNeeded, RATIO_APPLIES_FROM_BYTES } from './source.ts';

const LOOSE = { maxDecompressedBytes: 1e12, maxExpansionRatio: 200 };

/**
 * A real gzip bomb: `{"values":[`, `spaces` bytes of spaces, `]}`, as concatenated gzip members
 * (which gunzip reads as one stream). The megabyte of spaces is compressed once and repeated:
 * compressing 512 MiB took seconds of CPU, more than the test's budget on a loaded machine.
 */
function gzipBomb(spaces: number): Buffer {
  const megabyte = gzipSync(Buffer.alloc(1024 * 1024, 0x20));
  const parts = [gzipSync('{"values":[')];
  for (let left = spaces; left > 0; left -= 1024 * 1024) parts.push(left >= 1024 * 1024 ? megabyte : gzipSync(Buffer.alloc(left, 0x20)));
  parts.push(gzipSync(']}'));
  return Buffer.concat(parts);
}

/** The bytes as a stream of 16 KiB chunks, counting how many of them were read. */
function chunked(bytes: Buffer): { source: Readable; read: () => number } {
  let read = 0;
  function* chunks(): Generator<Buffer> {
    for (let at = 0; at < bytes.length; at += 16_384) {
      read += Math.min(16_384, bytes.length - at);
      yield bytes.subarray(at, at + 16_384);
    }
  }
  return { source: Readable.from(chunks(), { objectMode: false }), read: () => read };
}

async function drain(chunks: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const chunk of chunks) n += chunk.length;
  return n;
}

describe('gunzipIfNeeded', () => {
  it('passes plain bytes through and decompresses gzip', async () => {
    const text = Buffer.from('timestamp,value\n2024-01-01T00:00:00Z,1\n');
    const out: Buffer[] = [];
    for await (const chunk of gunzipIfNeeded(chunked(gzipSync(text)).source, LOOSE)) out.push(Buffer.from(chunk));
    expect(Buffer.concat(out).equals(text)).toBe(true);
    expect(await drain(gunzipIfNeeded(chunked(text).source, LOOSE))).toBe(text.length);
  });

  it('stops a real gzip bomb at the expansion ratio, soon after 16 MiB of output, having read little of it', async () => {
    const bomb = gzipBomb(512 * 1024 * 1024);
    const { source, read } = chunked(bomb);
    let out = 0;
    const error = await (async () => {
      try {
        for await (const chunk of gunzipIfNeeded(source, LOOSE)) out += chunk.length;
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(UploadLimitExceeded);
    expect((error as Error).message).toMatch(
      /^the upload expands to more than 200× its compressed size \(MERIDIAN_MAX_EXPANSION_RATIO; stopped at \d+ bytes from \d+\); nothing was stored$/,
    );
    expect(out).toBeGreaterThanOrEqual(RATIO_APPLIES_FROM_BYTES - 1024 * 1024);
    expect(out).toBeLessThan(2 * RATIO_APPLIES_FROM_BYTES);
    expect(read()).toBeLessThan(bomb.length / 4);
    expect(source.destroyed).toBe(true);
  });

  it('does not apply the ratio to small outputs, however compressible', async () => {
    const text = Buffer.alloc(RATIO_APPLIES_FROM_BYTES - 1, 0x41);
    expect(await drain(gunzipIfNeeded(chunked(gzipSync(text)).source, { maxDecompressedBytes: 1e12, maxExpansionRatio: 2 }))).toBe(text.length);
  });

  it('stops gzip output past maxDecompressedBytes', async () => {
    const { source } = chunked(gzipSync(Buffer.alloc(1_000_000, 0x41)));
    await expect(drain(gunzipIfNeeded(source, { maxDecompressedBytes: 100_000, maxExpansionRatio: 200 }))).rejects.toThrow(
      new UploadLimitExceeded('the upload expands to more than 100000 bytes (MERIDIAN_MAX_DECOMPRESSED_BYTES); nothing was stored'),
    );
    expect(source.destroyed).toBe(true);
  });

  it('stops a plain upload past maxDecompressedBytes', async () => {
    const { source, read } = chunked(Buffer.alloc(1_000_000, 0x41));
    await expect(drain(gunzipIfNeeded(source, { maxDecompressedBytes: 100_000, maxExpansionRatio: 200 }))).rejects.toThrow(
      new UploadLimitExceeded('the upload is larger than 100000 bytes (MERIDIAN_MAX_DECOMPRESSED_BYTES); nothing was stored'),
    );
    expect(read()).toBeLessThan(200_000);
    expect(source.destroyed).toBe(true);
  });

  it('ends with the error the source was destroyed with, gzip or not (how the time budget stops a read)', async () => {
    for (const bytes of [Buffer.alloc(1_000_000, 0x41), gzipSync(Buffer.alloc(10_000_000, 0x41))]) {
      const { source } = chunked(bytes);
      const reading = drain(gunzipIfNeeded(source, LOOSE));
      source.destroy(new UploadLimitExceeded('out of time'));
      await expect(reading).rejects.toThrow(new UploadLimitExceeded('out of time'));
    }
  });

  it('destroys the source when the reader stops early', async () => {
    const { source } = chunked(gzipSync(Buffer.alloc(1_000_000, 0x41)));
    for await (const _ of gunzipIfNeeded(source, LOOSE)) break;
    expect(source.destroyed).toBe(true);
  });
});
