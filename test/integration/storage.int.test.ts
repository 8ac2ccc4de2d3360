import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { blobStoreOver, createStorage, ensureBucket, expireStaging, pingStorage } from '@meridian/storage';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { isolatedSettings } from '../support/settings.ts';

describe('MinIO adapter against a real server', () => {
  const settings = isolatedSettings();
  const storage = createStorage({
    endpoint: settings.S3_ENDPOINT,
    accessKey: settings.S3_ACCESS_KEY,
    secretKey: settings.S3_SECRET_KEY,
    region: settings.S3_REGION,
    bucket: settings.S3_BUCKET,
  });
  afterAll(async () => {
    const names: string[] = [];
    for await (const o of storage.client.listObjectsV2(storage.bucket, '', true)) names.push((o as { name: string }).name);
    await storage.client.removeObjects(storage.bucket, names);
    await storage.client.removeBucket(storage.bucket);
  });

  it('creates the bucket idempotently and answers the readiness probe', async () => {
    await ensureBucket(storage, settings.S3_REGION);
    await ensureBucket(storage, settings.S3_REGION);
    await expect(pingStorage(storage)).resolves.toBeUndefined();
  });

  it('sets the staging expiry rule, replaces it idempotently, and removes it for 0', async () => {
    await ensureBucket(storage, settings.S3_REGION);
    await expireStaging(storage, 3);
    await expireStaging(storage, 7);
    // The client gives one rule as an object, several as an array; no configuration as an error.
    const rules = async () => {
      const rule = (await storage.client.getBucketLifecycle(storage.bucket).catch(() => null))?.Rule as unknown;
      return Array.isArray(rule) ? rule : rule ? [rule] : [];
    };
    expect(await rules()).toEqual([
      expect.objectContaining({
        ID: 'meridian-staging-expiry',
        Status: 'Enabled',
        Filter: expect.objectContaining({ Prefix: 'staging/' }),
        Expiration: expect.objectContaining({ Days: 7 }),
      }),
    ]);
    await expireStaging(storage, 0);
    expect(await rules()).toEqual([]);
  });

  it('a whole-object put cut by a reset or hung-up connection is sent again, and fails only past its few attempts', async () => {
    await ensureBucket(storage, settings.S3_REGION);
    const proxy = await startFaultProxy(settings.S3_ENDPOINT);
    try {
      const viaProxy = createStorage({
        endpoint: proxy.url,
        accessKey: settings.S3_ACCESS_KEY,
        secretKey: settings.S3_SECRET_KEY,
        region: settings.S3_REGION,
        bucket: settings.S3_BUCKET,
      });
      const blobs = blobStoreOver(viaProxy, settings.S3_REGION);
      const bytes = randomBytes(100_000);
      for (const blip of ['reset', 'hang_up'] as const) {
        // The next connection fails, and so does the idle keep-alive socket the previous put left
        // (set() ends it, as a server closing idle sockets does): at most two of the three attempts.
        await proxy.set(blip, { connections: 1 });
        await blobs.put(`staging/retried-${blip}`, bytes);
        expect((await viaProxy.client.statObject(viaProxy.bucket, `staging/retried-${blip}`)).size).toBe(bytes.length);
      }
      await proxy.set('reset');
      await expect(blobs.put('staging/never', bytes)).rejects.toMatchObject({ code: 'ECONNRESET' });
      await proxy.set('forward');
      expect(await blobs.size('staging/never')).toBeNull();
    } finally {
      await proxy.close();
    }
  });

  it('puts an object and gets identical bytes back', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    await storage.client.putObject(storage.bucket, 'blobs/one', bytes, bytes.length);
    const stream = await storage.client.getObject(storage.bucket, 'blobs/one');
    const hash = createHash('sha256');
    for await (const chunk of stream) hash.update(chunk as Buffer);
    expect(hash.digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});
