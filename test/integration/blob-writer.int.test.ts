import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobWriter, createStorage, ensureBucket } from '@meridian/storage';
import { isolatedSettings } from '../support/settings.ts';

/** S3's (and MinIO's) smallest part but the last. */
const PART = 5 * 1024 * 1024;

describe('BlobWriter against a real MinIO', () => {
  const settings = isolatedSettings();
  const storage = createStorage({ endpoint: settings.S3_ENDPOINT, accessKey: settings.S3_ACCESS_KEY, secretKey: settings.S3_SECRET_KEY, region: settings.S3_REGION, bucket: settings.S3_BUCKET });
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  const read = async (key: string) => {
    const chunks: Buffer[] = [];
    for await (const c of await storage.client.getObject(storage.bucket, key)) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  const incomplete = async () => {
    const found: string[] = [];
    for await (const u of storage.client.listIncompleteUploads(storage.bucket, '', true)) found.push((u as { key: string }).key);
    return found;
  };

  beforeAll(() => ensureBucket(storage, settings.S3_REGION));
  afterAll(async () => {
    const names: string[] = [];
    for await (const o of storage.client.listObjectsV2(storage.bucket, '', true)) names.push((o as { name: string }).name);
    await storage.client.removeObjects(storage.bucket, names);
    await storage.client.removeBucket(storage.bucket);
  });

  it.each([0, 1, PART - 1, PART, PART + 1, 2 * PART + 17])('stores %i bytes exactly, in odd-sized chunks, leaving no unfinished upload', async (size) => {
    const data = randomBytes(size);
    const key = `w/${size}`;
    const writer = new BlobWriter(storage, key, PART);
    for (let i = 0; i < data.length; i += 100_003) await writer.write(data.subarray(i, i + 100_003));
    await writer.end();
    expect(sha(await read(key))).toBe(sha(data));
    expect(await incomplete()).toEqual([]);
  });

  it('abort in the middle of a multipart upload leaves neither an object nor an unfinished upload', async () => {
    const writer = new BlobWriter(storage, 'w/aborted', PART);
    await writer.write(randomBytes(PART + 1024));
    expect(await incomplete()).toEqual(['w/aborted']);
    await writer.abort();
    expect(await incomplete()).toEqual([]);
    await expect(storage.client.statObject(storage.bucket, 'w/aborted')).rejects.toThrow();
  });
});
