import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gunzipBounded } from './gunzip.ts';

describe('gunzipBounded', () => {
  it('gunzips a body within the bound', async () => {
    expect((await gunzipBounded(gzipSync('m v=1 1\n'), 1024)).toString()).toBe('m v=1 1\n');
  });

  it('refuses a gzip bomb at the bound (413), having written no more than it', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024)); // 64 MiB of zeros in about 64 KiB
    expect(bomb.length).toBeLessThan(128 * 1024);
    await expect(gunzipBounded(bomb, 1024 * 1024)).rejects.toMatchObject({
      code: 'payload_too_large',
      message: 'the body is more than 1048576 bytes once gunzipped',
    });
  });

  it('refuses a body that is not gzip (400)', async () => {
    await expect(gunzipBounded(Buffer.from('not gzip'), 1024)).rejects.toMatchObject({ code: 'validation' });
  });
});
