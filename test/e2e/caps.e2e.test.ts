import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

// Every per-user cap lowered, so each test goes past it with a handful of requests.
const settings = isolatedSettings({
  MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: '2',
  MERIDIAN_MAX_QUEUED_TASKS_PER_USER: '3',
  MERIDIAN_MAX_API_KEYS_PER_USER: '3',
  MERIDIAN_MAX_DOWNLOADS_PER_USER: '2',
  MERIDIAN_MAX_FILES_PER_USER: '2',
  MERIDIAN_MAX_GRANTS_PER_FILE: '2',
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
});
let api: RunningApi;
let root: string;

beforeAll(async () => {
  api = await startApi(settings);
  root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
});
afterAll(async () => {
  await api?.close();
});

const user = (name: string) => createUser(api.url, root, name, [{ match: 'prefix', value: `${name}.`, access: 'rw' }]);
const jsonUpload = (key: string, metric: string, headers: Record<string, string> = {}) =>
  call(`${api.url}/api/v1/metrics/upload`, key, {
    method: 'POST',
    body: { metric_name: metric, values: [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }] },
    headers,
  });

/**
 * A request whose body is being sent and not finished (it declares more bytes than it sends):
 * the api holds it as an upload in flight. `finish` sends the rest; `cut` goes away.
 */
function openUpload(key: string, metric: string) {
  const url = new URL(api.url);
  const first = 'timestamp,value\n2024-01-01T00:00:00Z,1\n';
  const rest = '2024-01-01T00:00:01Z,2\n';
  const socket = connect(Number(url.port), url.hostname);
  socket.write(
    `POST /api/v1/metrics_file_upload?metric_name=${metric} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: text/csv\r\nContent-Length: ${first.length + rest.length}\r\nConnection: close\r\n\r\n${first}`,
  );
  let answer = '';
  socket.on('data', (d: Buffer) => {
    answer += d.toString();
  });
  const ended = new Promise<number>((resolve) => socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0))));
  socket.on('error', () => undefined);
  return {
    ended,
    finish: () => {
      socket.write(rest);
      return ended;
    },
    cut: () => socket.destroy(),
  };
}

const expectProblem = (res: { status: number; json: any; headers: Headers }, status: number, type: string, setting: string) => {
  expect(res.status, JSON.stringify(res.json)).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
  expect(res.json.type).toBe(type);
  expect(res.json.detail).toContain(setting);
};

describe('per-user caps against the real stack', () => {
  it('unfinished tasks: past the cap a new upload gets 429 naming it; a retry of an existing task and other users still pass', async () => {
    // No ingest worker runs here: every accepted upload stays queued.
    const ada = await user('qa');
    for (let i = 0; i < 3; i++) expect((await jsonUpload(ada, 'qa.m', { 'Idempotency-Key': `k${i}` })).status).toBe(202);
    const refused = await jsonUpload(ada, 'qa.m');
    expectProblem(refused, 429, '/problems/too-many', 'MERIDIAN_MAX_QUEUED_TASKS_PER_USER');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await jsonUpload(ada, 'qa.m', { 'Idempotency-Key': 'k1' })).status).toBe(202);
    expect((await jsonUpload(await user('qb'), 'qb.m')).status).toBe(202);
  });

  it('uploads in flight: a third body at once gets 429 before it is read; a finished or cut upload gives its slot back', async () => {
    const key = await user('fa');
    // Three bodies at once, none finished: two are being received, the third is refused before its body.
    const opened = [openUpload(key, 'fa.m'), openUpload(key, 'fa.m'), openUpload(key, 'fa.m')];
    const refusedAt = await Promise.race(opened.map((u, i) => u.ended.then((status) => ({ i, status }))));
    expect(refusedAt.status).toBe(429);
    const [first, second] = opened.filter((_, i) => i !== refusedAt.i) as [ReturnType<typeof openUpload>, ReturnType<typeof openUpload>];
    expectProblem(await jsonUpload(key, 'fa.m', { 'Idempotency-Key': 'probe' }), 429, '/problems/too-many', 'MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER');
    // Cut `second`: once the api has dropped its staged bytes its slot is free, while `first` holds the other.
    second.cut();
    let after = 429;
    for (let i = 0; i < 100 && after === 429; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = (await jsonUpload(key, 'fa.m', { 'Idempotency-Key': 'probe' })).status;
    }
    expect(after).toBe(202);
    expect(await first.finish()).toBe(202);
  });

  it('API keys: one past the cap gets 409 naming it; revoking one makes room', async () => {
    const key = await user('ka'); // holds 1
    const made: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await call(`${api.url}/api/v1/api_keys`, key, { method: 'POST' });
      expect(res.status).toBe(201);
      made.push(res.json.key_id);
    }
    expectProblem(await call(`${api.url}/api/v1/api_keys`, key, { method: 'POST' }), 409, '/problems/limit-reached', 'MERIDIAN_MAX_API_KEYS_PER_USER');
    expect((await call(`${api.url}/api/v1/api_keys/${made[0]}`, key, { method: 'DELETE' })).status).toBe(204);
    expect((await call(`${api.url}/api/v1/api_keys`, key, { method: 'POST' })).status).toBe(201);
  });

  it('files: an empty file gets 400; past the cap (definitions in progress count) a definition gets 409 before its body is read', async () => {
    const key = await user('fi');
    const define = async (bytes: string) => {
      const form = new FormData();
      form.set('file', new Blob([bytes]), 'f.txt');
      const res = await fetch(`${api.url}/api/v1/file/new`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
      return { status: res.status, headers: res.headers, json: (await res.json()) as any };
    };
    const empty = await define('');
    expect(empty.status).toBe(400);
    expect(empty.json.detail).toMatch(/empty/);
    expect((await define('one')).status).toBe(202);
    expect((await define('two')).status).toBe(202);
    expectProblem(await define('three'), 409, '/problems/limit-reached', 'MERIDIAN_MAX_FILES_PER_USER');
  });
});

describe('downloads streaming at once, with an ingest worker', () => {
  let ingest: Awaited<ReturnType<typeof startWorker>>;
  let key: string;
  const ROWS = 400_000; // about 30 MB of CSV: more than socket buffers hold, so an unread download stays open

  beforeAll(async () => {
    ingest = await startWorker(settings);
    key = await user('da');
    const lines = ['timestamp,value'];
    for (let i = 0; i < ROWS; i++) lines.push(`${formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000)},${i}`);
    const form = new FormData();
    form.set('file', new Blob([lines.join('\n')]), 'points.csv');
    const res = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=da.m`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}` },
      body: form,
    });
    const task = await waitForTask(api.url, key, ((await res.json()) as { task_id: string }).task_id, 120_000);
    expect(task.status).toBe('succeeded');
  }, 180_000);
  afterAll(async () => {
    await ingest?.close();
  });

  it('grants: a file is shared with at most MERIDIAN_MAX_GRANTS_PER_FILE names (any well-formed name counts)', async () => {
    const form = new FormData();
    form.set('file', new Blob(['shared bytes']), 'shared.txt');
    const defined = (await (await fetch(`${api.url}/api/v1/file/new`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form })).json()) as {
      task_id: string;
      file_id: string;
    };
    expect((await waitForTask(api.url, key, defined.task_id)).status).toBe('succeeded');
    const share = (grantee: string, access = 'r') =>
      call(`${api.url}/api/v1/files/${defined.file_id}/entitlements/${grantee}`, key, { method: 'PUT', body: { access } });
    expect((await share('made-up-1')).status).toBe(200);
    expect((await share('made-up-2')).status).toBe(200);
    expectProblem(await share('made-up-3'), 409, '/problems/limit-reached', 'MERIDIAN_MAX_GRANTS_PER_FILE');
    expect((await share('made-up-2', 'rw')).status).toBe(200); // a grant held may still change
  });

  const downloadUrl = `/api/v1/metrics/download?metrics=da.m&max_rows=${ROWS}`;
  /** A download whose body the client does not read: the api's stream waits on the socket. */
  function stalledDownload(): Promise<{ res: IncomingMessage; req: ClientRequest }> {
    return new Promise((resolve, reject) => {
      const req = request(new URL(`${api.url}${downloadUrl}`), { headers: { Authorization: `Bearer ${key}` } });
      req.on('response', (res) => {
        res.pause();
        resolve({ res, req });
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('a third download at once gets 429; HEAD takes no slot; a client that goes away gives its slot back', async () => {
    const a = await stalledDownload();
    const b = await stalledDownload();
    expect([a.res.statusCode, b.res.statusCode]).toEqual([200, 200]);
    expectProblem(await call(`${api.url}${downloadUrl}`, key), 429, '/problems/too-many', 'MERIDIAN_MAX_DOWNLOADS_PER_USER');
    // The POST form of the download counts against the same cap.
    expectProblem(
      await call(`${api.url}/api/v1/metrics/download`, key, { method: 'POST', body: { metrics: ['da.m'] } }),
      429,
      '/problems/too-many',
      'MERIDIAN_MAX_DOWNLOADS_PER_USER',
    );
    const head = await fetch(`${api.url}${downloadUrl}`, { method: 'HEAD', headers: { Authorization: `Bearer ${key}` } });
    expect(head.status).not.toBe(429);
    a.req.destroy();
    b.req.destroy();
    // The slots come back once the api sees the sockets close.
    const after = await waitFor(
      'a download slot given back',
      async () => {
        const res = await call(`${api.url}/api/v1/metrics/download?metrics=da.m&max_rows=10`, key);
        return res.status === 429 ? undefined : res;
      },
      10_000,
      100,
    );
    expect(after.status).toBe(200);
  });

  it('no slot leaks, whatever ends a download: finished, refused, unknown metric, aborted', async () => {
    for (let round = 0; round < 3; round++) {
      expect((await call(`${api.url}/api/v1/metrics/download?metrics=da.m&max_rows=10`, key)).status).toBe(200);
      expect((await call(`${api.url}/api/v1/metrics/download?metrics=da.m&max_rows=-1`, key)).status).toBe(400);
      expect((await call(`${api.url}/api/v1/metrics/download?metrics=da.none`, key)).status).toBe(404);
      const aborted = await stalledDownload();
      aborted.req.destroy();
    }
    // 12 downloads ended in every way, with a cap of 2: both slots come back (once the api has
    // seen the last aborted socket close), and stay free for two downloads at once.
    const held: Array<Awaited<ReturnType<typeof stalledDownload>>> = [];
    try {
      await waitFor(
        'both download slots free',
        async () => {
          held.push(await stalledDownload());
          if (held.at(-1)!.res.statusCode === 200 && held.length === 2) return true;
          if (held.at(-1)!.res.statusCode !== 200) held.pop()!.req.destroy();
          return undefined;
        },
        10_000,
        100,
      );
      expect(held.map((d) => d.res.statusCode)).toEqual([200, 200]);
    } finally {
      for (const d of held) d.req.destroy();
    }
  });
});
