import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '@meridian/storage';
import { CLAIMS_PREFIX, REMOVALS_PREFIX } from '../../apps/ingest/src/files/blobs.ts';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { meridian } from '../support/cli.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';
import { incompleteUploads } from '../support/incomplete-uploads.ts';
import { freePort } from '../support/ports.ts';
import { startApp, untilReady, type AppProcess } from '../support/processes.ts';

/** Where every topic's points archive lives in the bucket (archivePrefix). */
const ARCHIVE_ROOT = '_archive/';

const MB = 1_000_000;
/** The big file's size in MiB; FILES_E2E_BIG_MB=600 shows the api's memory does not grow with it. */
const BIG_MIB = Number(process.env.FILES_E2E_BIG_MB ?? 200);
const DEFAULT_QUOTA = Math.max(1_000, 3 * BIG_MIB) * MB;
const settings = isolatedSettings({
  MERIDIAN_MAX_UPLOAD_BYTES: String(Math.max(300, 2 * BIG_MIB) * MB),
  MERIDIAN_FILE_QUOTA_BYTES: String(DEFAULT_QUOTA),
  MERIDIAN_BLOB_SWEEP_INTERVAL_MS: '200',
});
const clickhouse = async (sql: string) =>
  (await (await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent(sql)}`)).text()).trim();
/** Once the blob collector has handled every deletion the files read model shows (its sweep position, migration 006). */
const collectorSwept = () =>
  waitFor(
    "the blob collector to sweep past the read model's deletions",
    async () =>
      (await clickhouse('SELECT (SELECT max(kafka_offset) FROM blob_sweeps) >= (SELECT max(kafka_offset) FROM files_positions)')) === '1' || undefined,
  );
let api: RunningApi;
/** The big file's api, in a process of its own. */
let own: AppProcess | undefined;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let root: string;
let ada: string; // owns files
let bob: string; // another user
let carol: string;

type Accepted = { task_id: string; file_id: string };
type Entry = { created_at: string; entitlement: 'r' | 'rw'; file_description: string; file_id: string; file_name: string; user_name: string };
type Field = [name: string, value: string];

/** A multipart definition with text fields before and after the file part (both orders must work). */
async function define(
  key: string,
  content: Buffer | string,
  options: { name?: string; type?: string; before?: Field[]; after?: Field[]; path?: string; url?: string } = {},
) {
  const form = new FormData();
  for (const [k, v] of options.before ?? []) form.append(k, v);
  form.append('file', new Blob([content], { type: options.type ?? 'application/octet-stream' }), options.name ?? 'data.bin');
  for (const [k, v] of options.after ?? []) form.append(k, v);
  const res = await fetch(`${options.url ?? api.url}${options.path ?? '/api/v1/file/new'}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}` },
    body: form,
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    json: (text ? JSON.parse(text) : undefined) as Accepted & { type?: string; detail?: string; errors?: Array<{ field: string; reason: string }> },
  };
}

async function defined(key: string, content: Buffer | string, options: Parameters<typeof define>[2] = {}): Promise<Accepted> {
  const res = await define(key, content, options);
  expect(res.status, JSON.stringify(res.json)).toBe(202);
  const task = await waitForTask(options.url ?? api.url, key, res.json.task_id);
  expect(task.status, `${task.reason}`).toBe('succeeded');
  return res.json;
}

const list = async (key: string, query = '', url = api.url) => {
  const res = await call(`${url}/api/v1/files${query}`, key);
  expect(res.status).toBe(200);
  return res.json as { files_list: Entry[]; next_cursor: string | null };
};

const download = (key: string, fileId: string, headers: Record<string, string> = {}, url = api.url) =>
  fetch(`${url}/api/v1/file/download/${fileId}`, { headers: { Authorization: `Bearer ${key}`, ...headers } });

/** A process's resident memory now, in bytes (Linux /proc); NaN once it is gone, which fails the bound that reads it. */
const rssOf = (pid: number) => {
  try {
    return 1024 * Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  } catch {
    return Number.NaN;
  }
};

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/**
 * The bucket's objects a request could leave behind (staged bytes, blobs) and its unfinished
 * multipart uploads. The blob collector's own keys (its removals' kept bytes and definitions'
 * claims) are left out: they come and go as the worker collects what earlier tests deleted,
 * whenever its sweep runs, and no refused request writes one. So is the points archive (its
 * passes write their status whenever they run).
 */
async function bucketContents(storage: Storage): Promise<{ objects: Set<string>; incomplete: Set<string> }> {
  const objects = new Set<string>();
  for await (const o of storage.client.listObjectsV2(storage.bucket, '', true)) {
    const name = (o as { name: string }).name;
    if (!name.startsWith(REMOVALS_PREFIX) && !name.startsWith(CLAIMS_PREFIX) && !name.startsWith(ARCHIVE_ROOT)) objects.add(name);
  }
  const incomplete = new Set<string>();
  for (const u of await incompleteUploads(storage.client, storage.bucket, '')) incomplete.add(`${u.key} ${u.uploadId}`);
  return { objects, incomplete };
}

const newIn = (after: Set<string>, before: Set<string>) => [...after].filter((k) => !before.has(k));

/**
 * A definition whose multipart body is generated as it is sent: the file is `block` repeated
 * (byte i is block[i % block.length]) and goes out as views of that one block, so the client
 * holds nothing and adds no garbage of its own; a text field before the file, one after it.
 */
function streamedDefinition(key: string, size: number, block: Buffer, name: string, abortAfter?: number, url = api.url) {
  const aborter = new AbortController();
  const hash = createHash('sha256');
  const boundary = `----meridian${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file_description"\r\n\r\nbig one\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="enforce_schema"\r\n\r\nfalse\r\n--${boundary}--\r\n`);
  let sent = 0;
  let phase: 'head' | 'file' | 'tail' | 'done' = 'head';
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (phase === 'head') {
        controller.enqueue(head);
        phase = 'file';
      } else if (phase === 'file') {
        const at = sent % block.length;
        const bytes = block.subarray(at, Math.min(block.length, at + 1024 * 1024, at + size - sent));
        hash.update(bytes);
        sent += bytes.length;
        if (abortAfter !== undefined && sent > abortAfter) {
          aborter.abort(new Error('the client gave up'));
          return;
        }
        controller.enqueue(bytes);
        if (sent === size) phase = 'tail';
      } else if (phase === 'tail') {
        controller.enqueue(tail);
        phase = 'done';
      } else controller.close();
    },
  });
  return {
    url: `${url}/api/v1/files`,
    init: {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
      signal: aborter.signal,
    } as RequestInit,
    digest: () => hash.digest('hex'),
  };
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  ada = await createUser(api.url, root, 'ada', []);
  bob = await createUser(api.url, root, 'bob', []);
  carol = await createUser(api.url, root, 'carol', []);
});
afterAll(async () => {
  await own?.stop();
  await ingest?.close();
  await api?.close();
});

describe('defining and downloading files', () => {
  it('a 200 MB file streams through the api with flat memory; the download is the same bytes, with ETag, Range and 304', async () => {
    const size = BIG_MIB * 1024 * 1024;
    const rangeStart = 123_456_789;
    const rangeEnd = rangeStart + 99_999;
    const block = randomBytes(1_000_003);
    const expectedRange = Buffer.from(Array.from({ length: rangeEnd - rangeStart + 1 }, (_, k) => block[(rangeStart + k) % block.length]!));

    // The api runs in a process of its own, started as deployments start it (its V8 flags and
    // malloc arenas), so its resident memory is the api's alone: it must stay flat while 200 MB
    // go through. A 16 MB upload the same way first warms the allocator and the connections, so
    // the baseline is a running api's.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    own = startApp('api', settings, { MERIDIAN_API_PORT: String(port), MERIDIAN_API_INSTANCE: `files-e2e-${port}` });
    await untilReady(url);
    const pid = own.child.pid!;
    const warmUp = streamedDefinition(ada, 16 * 1024 * 1024, block, 'warm-up.bin', undefined, url);
    const warmed = await fetch(warmUp.url, warmUp.init);
    expect((await waitForTask(url, ada, ((await warmed.json()) as Accepted).task_id)).status).toBe('succeeded');

    const upload = streamedDefinition(ada, size, block, 'big.bin', undefined, url);
    const rssBefore = rssOf(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rssOf(pid));
    }, 25);
    const started = performance.now();
    const res = await fetch(upload.url, upload.init);
    const uploadSeconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const accepted = (await res.json()) as Accepted;
    expect(res.status, JSON.stringify(accepted)).toBe(202);
    expect(res.headers.get('location')).toBe(`/api/v1/tasks/${accepted.task_id}`);
    const digest = upload.digest();
    const uploadRssGrowth = rssPeak - rssBefore;

    const task = await waitForTask(url, ada, accepted.task_id, 170_000);
    expect(task.status, `${task.reason}`).toBe('succeeded');
    expect(task.result).toEqual({ file_id: accepted.file_id, size, sha256: digest });

    const dlBefore = rssOf(pid);
    let dlPeak = dlBefore;
    const dlSampler = setInterval(() => {
      dlPeak = Math.max(dlPeak, rssOf(pid));
    }, 25);
    const dlStarted = performance.now();
    const dl = await download(ada, accepted.file_id, {}, url);
    expect(dl.status).toBe(200);
    expect(dl.headers.get('content-length')).toBe(String(size));
    expect(dl.headers.get('etag')).toBe(`"${digest}"`);
    expect(dl.headers.get('content-type')).toBe('application/octet-stream');
    expect(dl.headers.get('content-disposition')).toBe(`attachment; filename="big.bin"; filename*=UTF-8''big.bin`);
    expect(dl.headers.get('accept-ranges')).toBe('bytes');
    const dlHash = createHash('sha256');
    let received = 0;
    for await (const part of dl.body as unknown as AsyncIterable<Uint8Array>) {
      dlHash.update(part);
      received += part.length;
    }
    const downloadSeconds = (performance.now() - dlStarted) / 1000;
    clearInterval(dlSampler);
    expect(received).toBe(size);
    expect(dlHash.digest('hex')).toBe(digest);

    const figures = {
      upload_mb_per_s: +(size / 1e6 / uploadSeconds).toFixed(1),
      download_mb_per_s: +(size / 1e6 / downloadSeconds).toFixed(1),
      api_rss_before_mb: +(rssBefore / 1e6).toFixed(0),
      api_rss_growth_during_upload_mb: +(uploadRssGrowth / 1e6).toFixed(1),
      api_rss_growth_during_download_mb: +((dlPeak - dlBefore) / 1e6).toFixed(1),
    };
    process.stdout.write(`files e2e figures: ${JSON.stringify(figures)}\n`);
    // The design holds (MERIDIAN_STORAGE_PARTS_IN_FLIGHT + 1) parts of 8 MiB of an upload, and a
    // download's chunks in flight: far below the file's 200 MB.
    expect(uploadRssGrowth).toBeLessThan(100 * MB);
    expect(dlPeak - dlBefore).toBeLessThan(100 * MB);

    const ranged = await download(ada, accepted.file_id, { Range: `bytes=${rangeStart}-${rangeEnd}` }, url);
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get('content-range')).toBe(`bytes ${rangeStart}-${rangeEnd}/${size}`);
    expect(ranged.headers.get('content-length')).toBe(String(rangeEnd - rangeStart + 1));
    expect(Buffer.from(await ranged.arrayBuffer()).equals(expectedRange)).toBe(true);

    const suffix = await download(ada, accepted.file_id, { Range: 'bytes=-10' }, url);
    expect(suffix.status).toBe(206);
    expect(suffix.headers.get('content-range')).toBe(`bytes ${size - 10}-${size - 1}/${size}`);
    expect((await suffix.arrayBuffer()).byteLength).toBe(10);

    const notModified = await download(ada, accepted.file_id, { 'If-None-Match': `"${digest}"` }, url);
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get('etag')).toBe(`"${digest}"`);

    const several = await download(ada, accepted.file_id, { Range: 'bytes=0-9,20-29' }, url);
    expect(several.status).toBe(200);
    expect(several.headers.get('content-length')).toBe(String(size));
    await several.body?.cancel();

    const beyond = await download(ada, accepted.file_id, { Range: `bytes=${size}-` }, url);
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${size}`);
    expect(beyond.headers.get('content-type')).toMatch(/problem\+json/);

    const staleRange = await download(ada, accepted.file_id, { Range: 'bytes=0-9', 'If-Range': '"0000"' }, url);
    expect(staleRange.status).toBe(200);
    await staleRange.body?.cancel();

    const [entry] = (await list(ada, '?name_contains=BIG', url)).files_list;
    expect(entry).toEqual({
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/),
      entitlement: 'rw',
      file_description: 'big one',
      file_id: accepted.file_id,
      file_name: 'big.bin',
      user_name: 'ada',
    });
    const usage = async () => (await call(`${url}/api/v1/users`, ada)).json.users[0].files;
    expect(await usage()).toEqual({ bytes_used: size + 16 * 1024 * 1024, quota_bytes: DEFAULT_QUOTA });

    // Deleting them gives the quota back (and the blobs leave storage: no other file has these bytes).
    const warmUpId = (await list(ada, '?name_contains=warm-up', url)).files_list[0]!.file_id;
    for (const id of [accepted.file_id, warmUpId]) expect((await call(`${url}/api/v1/files/${id}`, ada, { method: 'DELETE' })).status).toBe(204);
    expect(await usage()).toEqual({ bytes_used: 0, quota_bytes: DEFAULT_QUOTA });
    const storage = api.platform.storage;
    await waitFor(
      'the big blob to be removed',
      async () => {
        try {
          await storage.client.statObject(storage.bucket, `blobs/sha256/${digest}`);
          return undefined;
        } catch (e) {
          return (e as { code?: string }).code === 'NotFound' ? true : undefined;
        }
      },
      30_000,
    );
  });

  it('over file_size_limit → 413 at once, and the bucket holds nothing new: no object, no unfinished multipart upload', async () => {
    const storage = api.platform.storage;
    // Let the worker finish removing what earlier definitions staged.
    await waitFor(
      'staging to drain',
      async () => ([...(await bucketContents(storage)).objects].every((k) => !k.startsWith('staging/')) ? true : undefined),
      30_000,
    );
    const before = await bucketContents(storage);
    const small = randomBytes(MB);
    const big = randomBytes(20 * MB); // 20 MB: more than two parts went up before the limit stopped it

    const first = await define(ada, small, { before: [['file_size_limit', String(MB - 1)]] });
    expect(first.status).toBe(413);
    expect(first.headers.get('content-type')).toMatch(/problem\+json/);
    expect(first.json).toMatchObject({ type: '/problems/payload-too-large', detail: expect.stringContaining(`file_size_limit of ${MB - 1} bytes`) });
    const after = await define(ada, small, { after: [['file_size_limit', String(MB - 1)]] });
    expect(after.status).toBe(413);
    const multipart = await define(ada, big, { before: [['file_size_limit', String(17 * MB)]] });
    expect(multipart.status).toBe(413);
    expect((await define(ada, small, { before: [['file_size_limit', 'lots']] })).status).toBe(400);
    expect((await define(ada, small, { before: [['enforce_schema', 'maybe']] })).status).toBe(400);

    const now = await bucketContents(storage);
    expect(newIn(now.objects, before.objects)).toEqual([]);
    expect(newIn(now.incomplete, before.incomplete)).toEqual([]);
    expect(now.incomplete.size).toBe(0);

    // A client that gives up half way leaves nothing behind either.
    const abandoned = streamedDefinition(ada, 40 * MB, randomBytes(4099), 'abandoned.bin', 20 * MB);
    await expect(fetch(abandoned.url, abandoned.init)).rejects.toThrow();
    await waitFor(
      'the abandoned upload to be cleaned up',
      async () => {
        const contents = await bucketContents(storage);
        return newIn(contents.objects, before.objects).length === 0 && contents.incomplete.size === 0 ? true : undefined;
      },
      15_000,
    );

    // Exactly at the limit is fine.
    await defined(ada, small, { before: [['file_size_limit', String(MB)]], name: 'exact.bin' });
  });

  it("over the account's quota → 413 saying how much is left; GET /users shows usage and quota", async () => {
    // A second api on the same log with a small default quota (the setting MERIDIAN_FILE_QUOTA_BYTES).
    const quotaApi = await startApi({ ...settings, MERIDIAN_FILE_QUOTA_BYTES: 3 * MB });
    try {
      const dave = await createUser(quotaApi.url, root, 'dave', []);
      await defined(dave, randomBytes(2 * MB), { url: quotaApi.url, name: 'two.bin' });
      const storage = quotaApi.platform.storage;
      const before = await bucketContents(storage);
      const refused = await define(dave, randomBytes(2 * MB), { url: quotaApi.url });
      expect(refused.status).toBe(413);
      expect(refused.json.detail).toMatch(new RegExp(`${MB} bytes left of ${3 * MB}`));
      expect(refused.json.errors).toEqual([{ field: 'file', reason: `${MB} bytes of quota left` }]);
      const now = await bucketContents(storage);
      expect(newIn(now.objects, before.objects)).toEqual([]);
      expect(newIn(now.incomplete, before.incomplete)).toEqual([]);
      // Refused at once from Content-Length when the body is plainly too large.
      const huge = await define(dave, randomBytes(5 * MB), { url: quotaApi.url });
      expect(huge.status).toBe(413);
      const me = await call(`${quotaApi.url}/api/v1/users`, dave);
      expect(me.json.users[0].files).toEqual({ bytes_used: 2 * MB, quota_bytes: 3 * MB });
      await defined(dave, randomBytes(MB), { url: quotaApi.url, name: 'fits.bin' });
    } finally {
      await quotaApi.close();
    }
  });

  it("an admin sets one user's own quota (route or CLI): their limit moves, no one else's; GET /users shows it; a non-admin gets 403", async () => {
    const erin = await createUser(api.url, root, 'erin', []);
    const frank = await createUser(api.url, root, 'frank', []);
    const setQuota = (key: string, who: string, quota_bytes: unknown) =>
      call(`${api.url}/api/v1/users/${who}/file_quota`, key, { method: 'PUT', body: { quota_bytes } });
    const filesOf = async (key: string) => (await call(`${api.url}/api/v1/users`, key)).json.users[0].files;

    expect((await setQuota(erin, 'erin', 10 * DEFAULT_QUOTA)).status).toBe(403);
    expect((await setQuota(root, 'ghost', MB)).status).toBe(404);
    for (const bad of [-1, 1.5, 1e15 + 1, '5', undefined]) expect((await setQuota(root, 'erin', bad)).status, String(bad)).toBe(400);
    expect(await filesOf(erin)).toEqual({ bytes_used: 0, quota_bytes: DEFAULT_QUOTA });

    // Lowered to 2 MB: erin's second 2 MB file is refused; frank's the same size is not.
    const lowered = await setQuota(root, 'erin', 2 * MB);
    expect(lowered.status).toBe(200);
    expect(lowered.json).toMatchObject({ user_name: 'erin', disabled: false, files: { bytes_used: 0, quota_bytes: 2 * MB } });
    await defined(erin, randomBytes(MB), { name: 'one.bin' });
    const refused = await define(erin, randomBytes(2 * MB));
    expect(refused.status).toBe(413);
    expect(refused.json.detail).toMatch(new RegExp(`${MB} bytes left of ${2 * MB}`));
    expect(refused.json.errors).toEqual([{ field: 'file', reason: `${MB} bytes of quota left` }]);
    await defined(frank, randomBytes(2 * MB), { name: 'two.bin' });
    expect(await filesOf(erin)).toEqual({ bytes_used: MB, quota_bytes: 2 * MB });
    expect(await filesOf(frank)).toEqual({ bytes_used: 2 * MB, quota_bytes: DEFAULT_QUOTA });
    const everyone = (await call(`${api.url}/api/v1/users`, root)).json.users as Array<{ user_name: string; files: unknown }>;
    expect(everyone.filter((u) => u.user_name === 'erin' || u.user_name === 'frank').map((u) => u.files)).toEqual([
      { bytes_used: MB, quota_bytes: 2 * MB },
      { bytes_used: 2 * MB, quota_bytes: DEFAULT_QUOTA },
    ]);

    // Raised: the same file fits now. null: back to the setting.
    expect((await setQuota(root, 'erin', 3 * MB)).json.files).toEqual({ bytes_used: MB, quota_bytes: 3 * MB });
    await defined(erin, randomBytes(2 * MB), { name: 'two.bin' });
    expect((await setQuota(root, 'erin', null)).json.files).toEqual({ bytes_used: 3 * MB, quota_bytes: DEFAULT_QUOTA });

    // The CLI sets it through the accounts log; the api folds it from there.
    expect((await meridian(settings, ['quota', 'erin', '0'])).code).toBe(0);
    await waitFor("the api to fold the CLI's quota", async () => ((await filesOf(erin)).quota_bytes === 0 ? true : undefined), 5000);
    expect((await define(erin, 'x')).json.errors).toEqual([{ field: 'file', reason: '0 bytes of quota left' }]);
    expect((await meridian(settings, ['quota', 'erin', 'lots'])).code).toBe(2);
    expect((await meridian(settings, ['quota', 'erin', 'default'])).code).toBe(0);
    await waitFor("the api to fold the CLI's default", async () => ((await filesOf(erin)).quota_bytes === DEFAULT_QUOTA ? true : undefined), 5000);
    expect(await filesOf(frank)).toEqual({ bytes_used: 2 * MB, quota_bytes: DEFAULT_QUOTA });
  });

  it('enforce_schema=true rejects a ragged CSV naming the line; without it the same bytes are accepted as they are', async () => {
    const ragged = 'id,name,score\n1,ada,3\n2,bob,4\n3,carol\n4,dan,5\n';
    const res = await define(ada, ragged, { name: 'ragged.csv', type: 'text/csv', after: [['enforce_schema', 'true']] });
    expect(res.status).toBe(202);
    const failed = await waitForTask(api.url, ada, res.json.task_id);
    expect(failed.status).toBe('failed');
    expect(failed.reason).toMatch(/line 4: expected 3 fields as in the header, found 2/);
    expect(failed.errors).toEqual([{ row: 4, column: 'csv', reason: 'expected 3 fields as in the header, found 2' }]);
    expect((await list(ada)).files_list.map((f) => f.file_id)).not.toContain(res.json.file_id);
    expect((await download(ada, res.json.file_id)).status).toBe(404);

    const asIs = await defined(ada, ragged, { name: 'ragged.csv', type: 'text/csv' });
    const dl = await download(ada, asIs.file_id);
    expect(dl.headers.get('content-type')).toBe('text/csv');
    expect(await dl.text()).toBe(ragged);

    await defined(ada, '{"a":1}\n{"a":2}\n', { name: 'rows.ndjson', before: [['enforce_schema', 'true']] });
    await defined(ada, 'x,y\r\n"1,5",2\r\n', { name: 'ok.csv', before: [['enforce_schema', 'true']] });
    const badJson = await define(ada, '[1, 2,\n 3,]\n', { name: 'bad.json', before: [['enforce_schema', 'true']] });
    const badTask = await waitForTask(api.url, ada, badJson.json.task_id);
    expect(badTask).toMatchObject({ status: 'failed', errors: [{ row: 2, column: 'json' }] });
  });
});

describe('who sees what', () => {
  it('another user can neither list nor download a file until it is shared; then reads with r but may not change or delete it', async () => {
    const content = `secret ${randomBytes(8).toString('hex')}`;
    const { file_id } = await defined(ada, content, { name: 'shared.txt', type: 'text/plain', before: [['file_description', 'for bob']] });
    const notFound = async (key: string, id: string) => {
      const res = await download(key, id);
      expect(res.status).toBe(404);
      const { instance: _i, request_id: _r, ...problem } = (await res.json()) as Record<string, unknown>;
      return problem;
    };
    expect((await list(bob)).files_list).toEqual([]);
    const hidden = await notFound(bob, file_id);
    expect(await notFound(bob, '00000000-0000-4000-8000-000000000000')).toEqual(hidden);
    expect(await notFound(bob, 'not-a-uuid')).toEqual(hidden);
    expect(await notFound(bob, 'x'.repeat(300))).toEqual(hidden);
    expect((await call(`${api.url}/api/v1/files/${file_id}`, bob, { method: 'DELETE' })).status).toBe(404);

    const share = (access: 'r' | 'rw', key = ada, who = 'bob') =>
      call(`${api.url}/api/v1/files/${file_id}/entitlements/${who}`, key, { method: 'PUT', body: { access } });
    const shared = await share('r');
    expect(shared.status).toBe(200);
    expect(shared.json.shared_with).toEqual([{ user_name: 'bob', access: 'r' }]);
    expect((await list(bob)).files_list).toEqual([
      expect.objectContaining({ file_id, entitlement: 'r', user_name: 'ada', file_description: 'for bob', file_name: 'shared.txt' }),
    ]);
    expect(await (await download(bob, file_id)).text()).toBe(content);
    expect((await call(`${api.url}/api/v1/files/${file_id}`, bob, { method: 'DELETE' })).status).toBe(403);
    expect((await call(`${api.url}/api/v1/files/${file_id}`, bob, { method: 'PATCH', body: { file_description: 'mine now' } })).status).toBe(403);
    expect((await share('r', bob, 'carol')).status).toBe(403);
    expect((await list(carol)).files_list).toEqual([]);
    // An existing, a disabled and an unknown user are answered alike: sharing does not tell which users exist.
    await createUser(api.url, root, 'gone', []);
    expect((await call(`${api.url}/api/v1/users/gone`, root, { method: 'DELETE' })).status).toBeLessThan(300);
    const alike: unknown[] = [];
    for (const who of ['carol', 'gone', 'ghost']) {
      const res = await share('r', ada, who);
      // Headers that move with every request, or with the length of the name (the body is compared with the name replaced).
      const headers = Object.fromEntries(
        [...res.headers].filter(([h]) => !['date', 'ratelimit-remaining', 'ratelimit-reset', 'x-request-id', 'content-length'].includes(h)),
      );
      alike.push({ status: res.status, body: res.text.replaceAll(who, '<who>'), headers });
      expect((await call(`${api.url}/api/v1/files/${file_id}/entitlements/${who}`, ada, { method: 'DELETE' })).status).toBe(204);
    }
    expect(alike[0]).toMatchObject({ status: 200 });
    expect(alike[1]).toEqual(alike[0]);
    expect(alike[2]).toEqual(alike[0]);
    expect((await share('r', ada, 'ada')).status).toBe(400);

    expect((await share('rw')).status).toBe(200);
    const described = await call(`${api.url}/api/v1/files/${file_id}`, bob, { method: 'PATCH', body: { file_description: 'edited by bob' } });
    expect(described.status).toBe(200);
    expect(described.json).toMatchObject({ file_description: 'edited by bob', entitlement: 'rw' });
    expect(described.json.shared_with).toBeUndefined(); // only the owner sees who else has it
    expect((await list(ada, '?name_contains=shared')).files_list[0]).toMatchObject({ file_description: 'edited by bob', entitlement: 'rw' });
    expect((await call(`${api.url}/api/v1/files/${file_id}`, bob, { method: 'DELETE' })).status).toBe(403);

    expect((await call(`${api.url}/api/v1/files/${file_id}/entitlements/bob`, ada, { method: 'DELETE' })).status).toBe(204);
    expect((await list(bob)).files_list).toEqual([]);
    expect(await notFound(bob, file_id)).toEqual(hidden);

    // Admins see every file, with rw.
    expect((await list(root, '?name_contains=shared.txt')).files_list).toEqual([expect.objectContaining({ file_id, entitlement: 'rw', user_name: 'ada' })]);

    // The owner deletes: gone for everyone, and the blob leaves storage (no other file has these bytes).
    const storage = api.platform.storage;
    const blob = `blobs/sha256/${sha256(content)}`;
    await storage.client.statObject(storage.bucket, blob);
    expect((await call(`${api.url}/api/v1/files/${file_id}`, ada, { method: 'DELETE' })).status).toBe(204);
    expect((await list(ada)).files_list.map((f) => f.file_id)).not.toContain(file_id);
    expect((await download(ada, file_id)).status).toBe(404);
    await waitFor(
      'the blob to be removed',
      async () => {
        try {
          await storage.client.statObject(storage.bucket, blob);
          return undefined;
        } catch (e) {
          return (e as { code?: string }).code === 'NotFound' ? true : undefined;
        }
      },
      30_000,
    );
  });

  it('both POST paths define files alike; files with the same bytes share one blob, kept while either lives', async () => {
    const content = `same bytes ${randomBytes(8).toString('hex')}\n`;
    const a = await define(ada, content, { path: '/api/v1/files', name: 'one.txt' });
    const b = await define(ada, content, { path: '/api/v1/file/new', name: 'two.txt' });
    for (const res of [a, b]) {
      expect(res.status).toBe(202);
      expect(Object.keys(res.json).sort()).toEqual(['file_id', 'task_id']);
      expect(res.headers.get('location')).toBe(`/api/v1/tasks/${res.json.task_id}`);
      expect((await waitForTask(api.url, ada, res.json.task_id)).status).toBe('succeeded');
    }
    const names = (await list(ada)).files_list
      .filter((f) => [a.json.file_id, b.json.file_id].includes(f.file_id))
      .map((f) => f.file_name)
      .sort();
    expect(names).toEqual(['one.txt', 'two.txt']);
    expect((await call(`${api.url}/api/v1/files/${a.json.file_id}`, ada, { method: 'DELETE' })).status).toBe(204);
    await collectorSwept(); // the collector has had its chance to (wrongly) remove the blob
    expect(await (await download(ada, b.json.file_id)).text()).toBe(content);
  });

  it('pages through the list with a cursor and filters by name', async () => {
    for (let i = 0; i < 5; i++) await defined(carol, `page ${i}`, { name: `page-${i}.txt` });
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page = await list(carol, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.files_list.length).toBeLessThanOrEqual(2);
      seen.push(...page.files_list.map((f) => f.file_name));
      cursor = page.next_cursor;
    }
    expect(seen).toEqual(['page-4.txt', 'page-3.txt', 'page-2.txt', 'page-1.txt', 'page-0.txt']);
    expect((await list(carol, '?name_contains=GE-3')).files_list.map((f) => f.file_name)).toEqual(['page-3.txt']);
    expect((await call(`${api.url}/api/v1/files?limit=0`, carol)).status).toBe(400);
  });
});

describe('the catalog is a fold of the log', () => {
  it('a file appears only once its task succeeded (the worker is down meanwhile), and an api restarted on the same log, or a rebuild of the read model, gives the same catalog', async () => {
    await ingest.close();
    const res = await define(bob, 'waiting,for\n1,2\n', { name: 'later.csv', before: [['enforce_schema', 'true']] });
    expect(res.status).toBe(202);
    const queued = await call(`${api.url}/api/v1/tasks/${res.json.task_id}`, bob);
    expect(queued.json).toMatchObject({ kind: 'file_definition', status: 'queued' });
    expect((await list(bob)).files_list).toEqual([]);
    expect((await download(bob, res.json.file_id)).status).toBe(404);

    ingest = await startWorker(settings);
    expect((await waitForTask(api.url, bob, res.json.task_id)).status).toBe('succeeded');
    expect((await list(bob)).files_list.map((f) => f.file_id)).toEqual([res.json.file_id]);

    const restarted = await startApi(settings);
    try {
      for (const key of [ada, bob, carol, root]) expect(await list(key, '', restarted.url)).toEqual(await list(key));
      // No 404 race: a file whose task succeeded on one instance is found at once on the other
      // (it waits, bounded, for the projection), by id and in its owner's list.
      const fresh = await defined(carol, 'seen everywhere', { name: 'everywhere.txt' });
      expect((await call(`${restarted.url}/api/v1/files/${fresh.file_id}`, carol)).status).toBe(200);
      expect((await list(carol, '?name_contains=everywhere', restarted.url)).files_list.map((f) => f.file_id)).toEqual([fresh.file_id]);
      // The catalog rebuilt from the log is the live one: verified, swapped in, and every list the same after.
      const before = await Promise.all([ada, bob, carol, root].map((key) => list(key)));
      const rebuilt = await meridian(settings, ['replay', 'rebuild', 'files', '--swap-if-verified', '--json']);
      expect(rebuilt.code, rebuilt.stderr).toBe(0);
      expect(JSON.parse(rebuilt.stdout)).toMatchObject({ verification: { verified: true, differing: 0 }, swapped: { retired: { files: 'files_retired' } } });
      expect(await Promise.all([ada, bob, carol, root].map((key) => list(key)))).toEqual(before);
      const me = await call(`${restarted.url}/api/v1/users`, ada);
      expect(me.json.users[0].files).toEqual((await call(`${api.url}/api/v1/users`, ada)).json.users[0].files);
    } finally {
      await restarted.close();
    }
  });
});
