import { randomUUID } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { runOverdueTimers, waitFor } from '../support/wait.ts';
import { incompleteUploads } from '../support/incomplete-uploads.ts';

const settings = isolatedSettings({
  MERIDIAN_MAX_JSON_BODY_BYTES: '3000000',
  MERIDIAN_MAX_UPLOAD_BYTES: '20000000',
  MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD: '20000',
});
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let writer: string; // rw on up.*
let reader: string; // r on up.*
let root: string; // admin

const T0 = Date.UTC(2024, 0, 1);
const iso = (i: number) => formatTimestamp(T0 + i * 1000);

async function rowsOf(metric: string): Promise<number> {
  // Names go as ClickHouse external data, never into the SQL text.
  const res = await fetch(
    `${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent('SELECT count() FROM points WHERE metric_name IN (SELECT name FROM wanted)')}`,
    {
      method: 'POST',
      body: (() => {
        const form = new FormData();
        form.set('wanted_structure', 'name String');
        form.set('wanted_format', 'TabSeparated');
        form.set('wanted', new Blob([`${metric.replace(/\\/g, '\\\\').replace(/\t/g, '\\t')}\n`]), 'wanted.tsv');
        return form;
      })(),
    },
  );
  return Number((await res.text()).trim());
}

async function uploadFile(metric: string | null, body: Buffer | string, query = '', key = writer) {
  const form = new FormData();
  form.set('file', new Blob([body]), 'points.csv');
  const qs = new URLSearchParams();
  if (metric !== null) qs.set('metric_name', metric);
  const res = await fetch(`${api.url}/api/v1/metrics_file_upload?${qs}${query}`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, json: (await res.json()) as { task_id: string; type?: string } };
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'up.', access: 'rw' }]);
  reader = await createUser(api.url, root, 'reader', [{ match: 'prefix', value: 'up.', access: 'r' }]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('metric uploads', () => {
  it('a JSON upload is accepted with 202, readable at once, and queryable exactly once when it succeeds', async () => {
    const values = [
      { timestamp: '2024-01-01T00:00:00+0000', value: 1.5 },
      { timestamp: '2024-01-01T00:00:01.250-0130', value: -2 },
      { timestamp: '2024-01-01T00:00:00+0000', value: 3 },
    ];
    const res = await call(`${api.url}/api/v1/metrics/upload`, writer, { method: 'POST', body: { metric_name: 'up.json:a', values } });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/api/v1/tasks/${res.json.task_id}`);
    const first = await call(`${api.url}/api/v1/tasks/${res.json.task_id}`, writer);
    expect(first.status).toBe(200);
    expect(['queued', 'running', 'succeeded']).toContain(first.json.status);
    const task = await waitForTask(api.url, writer, res.json.task_id);
    expect(task).toMatchObject({
      status: 'succeeded',
      progress: { rows_done: 3, rows_total: 3 },
      result: { points_accepted: 3, rows_rejected: 0, metrics: ['up.json:a'] },
      errors: [],
    });
    expect(await rowsOf('up.json:a')).toBe(3);
  });

  it('says what is wrong with a body: two file parts, a file part without a filename, UTF-16 JSON, a key given twice; a UTF-8 BOM is accepted', async () => {
    const boundary = 'b0und';
    const form = (...parts: string[]) =>
      fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=up.form`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${writer}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
        body: `${parts.join('')}--${boundary}--\r\n`,
      });
    const part = (disposition: string, body: string) => `--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n\r\n${body}\r\n`;
    const detail = async (res: Response) => `${res.status} ${((await res.json()) as { detail: string }).detail}`;
    const csv = `${iso(0)},1\n`;
    expect(await detail(await form(part('name="file"; filename="a.csv"', csv), part('name="file"; filename="b.csv"', csv)))).toMatch(
      /^400 .*more than one part named "file"/,
    );
    expect(await detail(await form(part('name="file"', csv)))).toMatch(/^400 .*"file" has no filename/);
    const fields = Array.from({ length: 25 }, (_, i) => part(`name="f${i}"`, 'x'));
    expect(await detail(await form(...fields, part('name="file"; filename="a.csv"', csv)))).toMatch(/^400 .*more than 20 text fields/);

    const json = (body: Buffer) =>
      fetch(`${api.url}/api/v1/metrics/upload`, { method: 'POST', headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json' }, body });
    const text = JSON.stringify({ metric_name: 'up.bom', values: [{ timestamp: iso(0), value: 1 }] });
    const withBom = await json(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    expect(withBom.status).toBe(202);
    expect(await waitForTask(api.url, writer, ((await withBom.json()) as { task_id: string }).task_id)).toMatchObject({ status: 'succeeded' });
    expect(await detail(await json(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])))).toBe(
      '400 the body is UTF-16LE; send JSON as UTF-8',
    );
    expect(await detail(await json(Buffer.from(text, 'utf16le')))).toBe('400 the body is UTF-16LE; send JSON as UTF-8');
    expect(await detail(await json(Buffer.from('{"metric_name":"up.a","values":[],"metric_name":"up.b"}')))).toMatch(
      /^400 the body gives "metric_name" more than once/,
    );
    expect(await detail(await json(Buffer.from(`{"metric_name":"up.a","values":[{"timestamp":"${iso(0)}","value":1}],"values":[]}`)))).toMatch(
      /^400 the body gives "values" more than once/,
    );
  });

  it("accepts the seed's sample: JSON text declared as multipart/form-data", async () => {
    const res = await fetch(`${api.url}/api/v1/metrics/upload`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'multipart/form-data' },
      body: JSON.stringify({ metric_name: 'up.seed', values: [{ timestamp: '2024-02-01T10:00:00+0000', value: 7 }] }),
    });
    expect(res.status).toBe(202);
    const task = await waitForTask(api.url, writer, ((await res.json()) as { task_id: string }).task_id);
    expect(task.status).toBe('succeeded');
    expect(await rowsOf('up.seed')).toBe(1);
  });

  it('every file layout of 100k points becomes queryable exactly once', async () => {
    const n = 100_000;
    const csvRows = (name?: string) => Array.from({ length: n }, (_, i) => (name ? `${name},${iso(i)},${i / 4},${iso(0)}` : `${iso(i)},${i / 4}`)).join('\n');
    const layouts: Array<[string, string | null, Buffer | string]> = [
      ['up.csv', 'up.csv', csvRows()],
      ['up.csvh', 'up.csvh', `timestamp,value\n${csvRows()}\n`],
      ['up.dl', null, `metric_name,timestamp,metric_numeric_value,updated_at\n${csvRows('up.dl')}\n`],
      ['up.arr', 'up.arr', JSON.stringify(Array.from({ length: n }, (_, i) => ({ timestamp: iso(i), value: i })))],
      ['up.nd', 'up.nd', Array.from({ length: n }, (_, i) => JSON.stringify({ timestamp: iso(i), value: i })).join('\n')],
      ['up.body', null, JSON.stringify({ metric_name: 'up.body', values: Array.from({ length: n }, (_, i) => ({ timestamp: iso(i), value: i })) })],
      ['up.gz', 'up.gz', gzipSync(csvRows())],
    ];
    await runOverdueTimers(); // building 7 × 100k rows can outlast the keep-alive timeout on a loaded machine
    const submitted = await Promise.all(layouts.map(async ([metric, query, body]) => ({ metric, res: await uploadFile(query, body) })));
    for (const { metric, res } of submitted) {
      expect(res.status, metric).toBe(202);
      const task = await waitForTask(api.url, writer, res.json.task_id, 120_000);
      expect(task.status, `${metric}: ${task.reason} ${JSON.stringify(task.errors.slice(0, 2))}`).toBe('succeeded');
      expect(task.result?.points_accepted, metric).toBe(n);
      expect(await rowsOf(metric), metric).toBe(n);
    }
  });

  it('one bad row fails the whole upload with its row number and stores nothing; on_error=skip keeps the rest', async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => `${iso(i)},${i}`);
    rows[4_321] = `${iso(4321)},not-a-number`;
    rows[7_000] = '2024-01-01T00:00:00,1'; // no offset: an error, never a guess
    const body = `timestamp,value\n${rows.join('\n')}\n`;
    const failed = await waitForTask(api.url, writer, (await uploadFile('up.bad', body)).json.task_id);
    expect(failed.status).toBe('failed');
    expect(failed.errors).toEqual([
      { row: 4323, column: 'value', reason: expect.any(String) },
      { row: 7002, column: 'timestamp', reason: expect.stringMatching(/offset/) },
    ]);
    expect(await rowsOf('up.bad')).toBe(0);

    const skipped = await waitForTask(api.url, writer, (await uploadFile('up.bad', body, '&on_error=skip')).json.task_id);
    expect(skipped).toMatchObject({ status: 'succeeded', result: { points_accepted: 9_998, rows_rejected: 2 } });
    expect(skipped.errors.map((e) => e.row)).toEqual([4323, 7002]);
    expect(await rowsOf('up.bad')).toBe(9_998);
  });

  it('a bad last row of a large file fails it after its batches were sent, and none of them ever becomes visible', async () => {
    // 300k points: six batches of MERIDIAN_POINT_BATCH_SIZE (50k) are in the upload's transaction before its last row is read.
    const rows = Array.from({ length: 300_000 }, (_, i) => `${iso(i)},${i}`);
    rows.push(`${iso(300_000)},not-a-number`);
    const failed = await waitForTask(api.url, writer, (await uploadFile('up.aon', `${rows.join('\n')}\n`)).json.task_id, 120_000);
    expect(failed).toMatchObject({ status: 'failed', reason: '1 invalid rows: nothing was stored', errors: [{ row: 300_001, column: 'value' }] });
    // The same metric, so the same points partition: once these are queryable, the projector has read past the aborted batches.
    const after = await waitForTask(api.url, writer, (await uploadFile('up.aon', `${iso(0)},1\n${iso(1)},2\n`)).json.task_id);
    expect(after.status).toBe('succeeded');
    expect(await rowsOf('up.aon')).toBe(2);
  });

  it('a download-layout file naming a metric without rw fails on that row', async () => {
    const body = `metric_name,timestamp,metric_numeric_value,updated_at\nup.ok,${iso(1)},1,${iso(1)}\nother.metric,${iso(2)},2,${iso(2)}\n`;
    const task = await waitForTask(api.url, writer, (await uploadFile(null, body)).json.task_id);
    expect(task.status).toBe('failed');
    expect(task.errors).toEqual([{ row: 3, column: 'metric_name', reason: 'no write access to this metric' }]);
  });

  it('a user created with rw just before its upload writes at once: the worker reads the accounts log to its end before each upload', async () => {
    const late = await createUser(api.url, root, 'late', [{ match: 'prefix', value: 'up.late.', access: 'rw' }]);
    const body = `metric_name,timestamp,metric_numeric_value,updated_at\nup.late.a,${iso(1)},1,${iso(1)}\nup.late.b,${iso(2)},2,${iso(2)}\n`;
    const task = await waitForTask(api.url, late, (await uploadFile(null, body, '', late)).json.task_id);
    expect(task).toMatchObject({ status: 'succeeded', result: { points_accepted: 2, rows_rejected: 0 } });
    expect(await rowsOf('up.late.a')).toBe(1);
    expect(await rowsOf('up.late.b')).toBe(1);
  });

  it('refuses what it must with the right 4xx problem, never a 5xx', async () => {
    const upload = (key: string | null, body: unknown, headers: Record<string, string> = {}) =>
      call(`${api.url}/api/v1/metrics/upload`, key, { method: 'POST', body, headers });
    const okBody = { metric_name: 'up.x', values: [{ timestamp: iso(0), value: 1 }] };
    expect((await upload(reader, okBody)).status).toBe(403);
    expect((await upload(writer, { ...okBody, metric_name: 'elsewhere' })).status).toBe(403);
    expect((await upload(null, okBody)).status).toBe(401);
    expect((await upload(writer, { ...okBody, metric_name: '=cmd()' })).status).toBe(400);
    expect((await upload(writer, { metric_name: 'up.x' })).status).toBe(400);
    const badKey = await upload(writer, okBody, { 'Idempotency-Key': 'x'.repeat(201) });
    expect(badKey.status).toBe(400);
    expect(badKey.json.errors).toEqual([{ field: 'header.idempotency-key', reason: 'must be 1 to 200 visible ASCII characters' }]);
    const tooMany = { metric_name: 'up.x', values: Array.from({ length: 20_001 }, () => ({ timestamp: iso(0), value: 1 })) };
    expect((await upload(writer, tooMany)).status).toBe(413);
    const huge = await fetch(`${api.url}/api/v1/metrics/upload`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json' },
      body: 'x'.repeat(3_000_001),
    });
    expect(huge.status).toBe(413);
    const malformed = await fetch(`${api.url}/api/v1/metrics/upload`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json' },
      body: '{"metric_name": "up.x", "values": [',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.headers.get('content-type')).toMatch(/problem\+json/);
    const badMultipart = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=up.x`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'multipart/form-data; boundary=zzz' },
      body: '--zzz\r\nContent-Disposition: form-data; name="other"\r\n\r\nx\r\n--zzz--\r\n',
    });
    expect(badMultipart.status).toBe(400);
    const staged = async () => {
      const { client, bucket } = api.platform.storage;
      const found: string[] = [];
      for await (const o of client.listObjectsV2(bucket, 'staging/', true)) found.push((o as { name: string }).name);
      for (const u of await incompleteUploads(client, bucket, 'staging/')) found.push(`incomplete:${u.key}`);
      return found.sort();
    };
    const before = await staged();
    const bigFile = await uploadFile('up.big', Buffer.alloc(20_000_001, 0x31));
    expect(bigFile.status).toBe(413);
    expect(await staged()).toEqual(before); // nothing of the refused file is left in MinIO
    expect((await uploadFile('up.x', '1,2', '', reader)).status).toBe(403);
  });

  it('a file body cut off while its parts are in flight to storage leaves neither an object nor an unfinished upload', async () => {
    // A second api whose storage calls pass a proxy that notes which multipart uploads begin: MinIO
    // lists unfinished uploads of one exact key only, and the staged key is random.
    const target = new URL(settings.S3_ENDPOINT);
    const begun: string[] = [];
    const proxy = createServer((req, res) => {
      if (req.method === 'POST' && /[?&]uploads(=|&|$)/.test(req.url!))
        begun.push(decodeURIComponent(new URL(req.url!, 'http://x').pathname.split('/').slice(2).join('/')));
      const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      req.pipe(out);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const viaProxy = await startApi({ ...settings, S3_ENDPOINT: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
    try {
      const { client, bucket } = api.platform.storage;
      // 19 MB of a declared 19.5 MB: two 8 MiB parts go to storage (both in flight, or stored) before the client vanishes.
      const req = request(`${viaProxy.url}/api/v1/metrics_file_upload?metric_name=up.cut`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'text/csv', 'Content-Length': '19500000' },
      });
      req.on('error', () => undefined);
      const line = Buffer.from('2024-01-01T00:00:00.000Z,1\n'.repeat(40_000));
      for (let sent = 0; sent < 19_000_000; sent += line.length) if (!req.write(line)) await new Promise((r) => req.once('drain', r));
      const key = await waitFor('a multipart upload of the body', () => begun[0]);
      await waitFor('its first part', async () => ((await incompleteUploads(client, bucket, key)).length > 0 ? true : undefined));
      req.destroy();
      await waitFor(
        'no unfinished upload of the cut body',
        async () => ((await incompleteUploads(client, bucket, key)).length === 0 ? true : undefined),
        30_000,
        200,
      );
      await expect(client.statObject(bucket, key)).rejects.toMatchObject({ code: 'NotFound' });
      expect(begun).toEqual([key]);
    } finally {
      await viaProxy.close();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });

  it('an Idempotency-Key retry returns the same task and stores nothing twice; another body with it is a conflict', async () => {
    const body = { metric_name: 'up.idem', values: [{ timestamp: iso(5), value: 5 }] };
    const first = await call(`${api.url}/api/v1/metrics/upload`, writer, { method: 'POST', body, headers: { 'Idempotency-Key': 'abc-1' } });
    const again = await call(`${api.url}/api/v1/metrics/upload`, writer, { method: 'POST', body, headers: { 'Idempotency-Key': 'abc-1' } });
    expect(first.status).toBe(202);
    expect(again.json.task_id).toBe(first.json.task_id);
    await waitForTask(api.url, writer, first.json.task_id);
    expect(await rowsOf('up.idem')).toBe(1);
    const other = await call(`${api.url}/api/v1/metrics/upload`, writer, {
      method: 'POST',
      body: { ...body, values: [] },
      headers: { 'Idempotency-Key': 'abc-1' },
    });
    expect(other.status).toBe(409);
  });

  it('an Idempotency-Key reused for the same bytes with other parameters is a conflict, and stores nothing', async () => {
    const csv = `${iso(1)},1\n${iso(2)},2\n`;
    const file = (metric: string, query = '') => {
      const form = new FormData();
      form.set('file', new Blob([csv]), 'points.csv');
      return fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=${metric}${query}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${writer}`, 'Idempotency-Key': 'params-1' },
        body: form,
      });
    };
    const first = await file('up.params.a');
    expect(first.status).toBe(202);
    const { task_id } = (await first.json()) as { task_id: string };
    expect((await file('up.params.b')).status).toBe(409);
    expect((await file('up.params.a', '&on_error=skip')).status).toBe(409);
    expect(((await (await file('up.params.a')).json()) as { task_id: string }).task_id).toBe(task_id);
    await waitForTask(api.url, writer, task_id);
    expect(await rowsOf('up.params.a')).toBe(2);
    expect(await rowsOf('up.params.b')).toBe(0);
  });

  it('concurrent requests under one Idempotency-Key with different bodies: one task, the other a conflict', async () => {
    const send = (value: number) =>
      call(`${api.url}/api/v1/metrics/upload`, writer, {
        method: 'POST',
        body: { metric_name: 'up.race', values: [{ timestamp: iso(1), value }] },
        headers: { 'Idempotency-Key': 'race-1' },
      });
    const results = await Promise.all([send(1), send(2)]);
    expect(results.map((r) => r.status).sort()).toEqual([202, 409]);
    const won = results.find((r) => r.status === 202)!;
    expect((await waitForTask(api.url, writer, won.json.task_id)).status).toBe('succeeded');
    expect(await rowsOf('up.race')).toBe(1);
  });

  it("someone else's task and an unknown one answer the same problem and headers", async () => {
    const res = await call(`${api.url}/api/v1/metrics/upload`, writer, { method: 'POST', body: { metric_name: 'up.notyours', values: [] } });
    await waitForTask(api.url, writer, res.json.task_id);
    const ask = async (taskId: string) => {
      const answer = await call(`${api.url}/api/v1/tasks/${taskId}`, reader, { headers: { 'X-Request-Id': 'same-request-id' } });
      // The id is in the problem's instance (the path); the rate limit's count moves with every request.
      const moving = new Set(['date', 'ratelimit-remaining', 'ratelimit-reset']);
      const headers = [...answer.headers].filter(([name]) => !moving.has(name));
      return { status: answer.status, body: answer.text.replaceAll(taskId, '<id>'), headers };
    };
    const notYours = await ask(res.json.task_id);
    const unknown = await ask(randomUUID());
    expect(notYours.status).toBe(404);
    expect(unknown).toEqual(notYours);
  });

  it('tasks are visible to their owner only and listed newest first', async () => {
    const res = await call(`${api.url}/api/v1/metrics/upload`, writer, { method: 'POST', body: { metric_name: 'up.mine', values: [] } });
    expect((await call(`${api.url}/api/v1/tasks/${res.json.task_id}`, reader)).status).toBe(404);
    expect((await call(`${api.url}/api/v1/tasks/not-a-uuid`, writer)).status).toBe(404);
    const list = await call(`${api.url}/api/v1/tasks?limit=3`, writer);
    expect(list.json.tasks[0].task_id).toBe(res.json.task_id);
    expect(list.json.tasks).toHaveLength(3);
    const failedOnly = await call(`${api.url}/api/v1/tasks?status=failed`, writer);
    expect(failedOnly.json.tasks.every((t: { status: string }) => t.status === 'failed')).toBe(true);
    expect((await call(`${api.url}/api/v1/tasks?status=bogus`, writer)).status).toBe(400);
  });
});
