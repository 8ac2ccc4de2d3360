import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Client } from 'minio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobWriter, createStorage, ensureBucket, type Storage } from '@meridian/storage';
import { isolatedSettings } from '../support/settings.ts';

/** S3's (and MinIO's) smallest part but the last. */
const PART = 5 * 1024 * 1024;

type UploadPart = Client['uploadPart'];

/** A client whose part uploads wait for the test to let each one through (or fail it), counting how many wait at once. */
class GatedClient extends Client {
  readonly waiting: Array<{ part: number; pass: () => void; fail: (e: Error) => void }> = [];
  mostAtOnce = 0;
  /** Part uploads called and not yet returned. */
  under = 0;

  override async uploadPart(...[config, payload]: Parameters<UploadPart>): ReturnType<UploadPart> {
    this.under += 1;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.under);
    try {
      await new Promise<void>((pass, fail) => this.waiting.push({ part: config.partNumber, pass, fail }));
      return await super.uploadPart(config, payload);
    } finally {
      this.under -= 1;
    }
  }

  /** Part uploads still under way when the multipart upload was aborted. */
  underAtAbort: number | null = null;

  override async abortMultipartUpload(...args: Parameters<Client['abortMultipartUpload']>): ReturnType<Client['abortMultipartUpload']> {
    this.underAtAbort = this.under;
    return super.abortMultipartUpload(...args);
  }

  /** Lets the oldest waiting part through. */
  passOne(): void {
    this.waiting.shift()!.pass();
  }
}

describe('BlobWriter against a real MinIO', () => {
  const settings = isolatedSettings();
  const options = {
    endpoint: settings.S3_ENDPOINT,
    accessKey: settings.S3_ACCESS_KEY,
    secretKey: settings.S3_SECRET_KEY,
    region: settings.S3_REGION,
    bucket: settings.S3_BUCKET,
  };
  const storage = createStorage(options);
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  const read = async (key: string) => {
    const chunks: Buffer[] = [];
    for await (const c of await storage.client.getObject(storage.bucket, key)) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  /** The unfinished multipart uploads of `key`. */
  const incomplete = async (key: string) => {
    const found: string[] = [];
    for await (const u of storage.client.listIncompleteUploads(storage.bucket, key, true)) if ((u as { key: string }).key === key) found.push(key);
    return found;
  };
  const gated = (): { client: GatedClient; storage: Storage } => {
    const url = new URL(settings.S3_ENDPOINT);
    const client = new GatedClient({
      endPoint: url.hostname,
      port: Number(url.port),
      useSSL: false,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: options.region,
      pathStyle: true,
    });
    return { client, storage: { client, bucket: storage.bucket } };
  };
  /** Settles once `p` has (true) or after a few turns of the event loop while it has not (false). */
  const settledSoon = async (p: Promise<unknown>) => {
    let done = false;
    void p.then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    return done;
  };
  /** Waits (a timer at least, so what the last step set off has run) until `check` holds. */
  const until = async (check: () => boolean) => {
    do await new Promise((r) => setTimeout(r, 5));
    while (!check());
  };
  /** Lets parts through, as they come, until `p` settles. */
  const passUntil = async (client: GatedClient, p: Promise<unknown>) => {
    while (!(await settledSoon(p))) if (client.waiting.length > 0) client.passOne();
    await p;
  };

  beforeAll(() => ensureBucket(storage, settings.S3_REGION));
  afterAll(async () => {
    const names: string[] = [];
    for await (const o of storage.client.listObjectsV2(storage.bucket, '', true)) names.push((o as { name: string }).name);
    await storage.client.removeObjects(storage.bucket, names);
    await storage.client.removeBucket(storage.bucket);
  });

  it.each([0, 1, PART - 1, PART, PART + 1, 2 * PART + 17, 5 * PART + 3])(
    'stores %i bytes exactly, in odd-sized chunks, leaving no unfinished upload',
    async (size) => {
      const data = randomBytes(size);
      const key = `w/${size}`;
      const writer = new BlobWriter(storage, key, { partBytes: PART, partsInFlight: 3 });
      for (let i = 0; i < data.length; i += 100_003) await writer.write(data.subarray(i, i + 100_003));
      await writer.end();
      expect(sha(await read(key))).toBe(sha(data));
      expect(await incomplete(key)).toEqual([]);
    },
  );

  it('abort in the middle of a multipart upload leaves neither an object nor an unfinished upload', async () => {
    const writer = new BlobWriter(storage, 'w/aborted', { partBytes: PART, partsInFlight: 1 });
    await writer.write(randomBytes(PART + 1024));
    expect(await incomplete('w/aborted')).toEqual(['w/aborted']);
    await writer.abort();
    expect(await incomplete('w/aborted')).toEqual([]);
    await expect(storage.client.statObject(storage.bucket, 'w/aborted')).rejects.toThrow();
  });

  it('reads on while up to partsInFlight parts upload, and no further until one is stored', async () => {
    const { client, storage: slow } = gated();
    const writer = new BlobWriter(slow, 'w/overlap', { partBytes: PART, partsInFlight: 2 });
    const data = randomBytes(4 * PART + 99);
    // Two full parts are handed over and the writes return while neither is stored yet.
    await writer.write(data.subarray(0, PART));
    expect(await settledSoon(writer.write(data.subarray(PART, 2 * PART)))).toBe(true);
    await until(() => client.waiting.length === 2);
    // The third part is full, but two are in flight: its write waits for a slot.
    const third = writer.write(data.subarray(2 * PART, 3 * PART));
    expect(await settledSoon(third)).toBe(false);
    client.passOne();
    await third;
    const rest = writer.write(data.subarray(3 * PART));
    expect(await settledSoon(rest)).toBe(false);
    client.passOne();
    await rest;
    await passUntil(client, writer.end());
    expect(client.mostAtOnce).toBe(2);
    expect(sha(await read('w/overlap'))).toBe(sha(data));
    expect(await incomplete('w/overlap')).toEqual([]);
  });

  it('abort with parts in flight waits for them, then leaves neither an object nor an unfinished upload', async () => {
    const { client, storage: slow } = gated();
    const writer = new BlobWriter(slow, 'w/aborted-in-flight', { partBytes: PART, partsInFlight: 3 });
    await writer.write(randomBytes(3 * PART));
    await until(() => client.waiting.length === 3);
    const aborted = writer.abort();
    // Aborting the multipart upload before its parts end could let a part land after it.
    expect(await settledSoon(aborted)).toBe(false);
    await passUntil(client, aborted);
    expect(client.underAtAbort).toBe(0);
    expect(await incomplete('w/aborted-in-flight')).toEqual([]);
    await expect(storage.client.statObject(storage.bucket, 'w/aborted-in-flight')).rejects.toThrow();
  });

  it('a part that fails fails the next write, and abort leaves nothing', async () => {
    const { client, storage: slow } = gated();
    const writer = new BlobWriter(slow, 'w/failed-part', { partBytes: PART, partsInFlight: 2 });
    await writer.write(randomBytes(2 * PART));
    await until(() => client.waiting.length === 2);
    client.waiting.shift()!.fail(new Error('storage went away'));
    client.passOne();
    await until(() => client.under === 0);
    await expect(writer.write(randomBytes(10))).rejects.toThrow('storage went away');
    await expect(writer.end()).rejects.toThrow('storage went away');
    await writer.abort();
    expect(await incomplete('w/failed-part')).toEqual([]);
    await expect(storage.client.statObject(storage.bucket, 'w/failed-part')).rejects.toThrow();
  });

  describe('through a proxy that records the requests', () => {
    const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders }> = [];
    let proxy: Server;
    beforeAll(async () => {
      const target = new URL(settings.S3_ENDPOINT);
      proxy = createServer((req, res) => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers });
        const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          void pipeline(answer, res).catch(() => undefined);
        });
        void pipeline(req, out).catch(() => undefined);
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    });
    afterAll(() => new Promise<void>((r) => proxy.close(() => r())));

    it('sends part bodies unsigned (UNSIGNED-PAYLOAD: no second hash of every byte) over plain HTTP, and MinIO stores them', async () => {
      const viaProxy = createStorage({ ...options, endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
      const data = randomBytes(2 * PART + 5);
      const writer = new BlobWriter(viaProxy, 'w/unsigned', { partBytes: PART, partsInFlight: 2 });
      await writer.write(data);
      await writer.end();
      const parts = seen.filter((r) => r.method === 'PUT' && r.url.includes('partNumber='));
      expect(parts).toHaveLength(3);
      for (const p of parts) expect(p.headers['x-amz-content-sha256']).toBe('UNSIGNED-PAYLOAD');
      expect(sha(await read('w/unsigned'))).toBe(sha(data));
    });
  });
});
