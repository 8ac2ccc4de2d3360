import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call } from '../support/api.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { rawRequest } from '../support/raw-http.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

// A real api process with an admin listener, a short idle timeout and a minimum body rate.
const settings = isolatedSettings({
  MERIDIAN_API_PORT: '18471',
  MERIDIAN_ADMIN_PORT: '18472',
  MERIDIAN_HTTP_IDLE_TIMEOUT_MS: '1500',
  MERIDIAN_HTTP_MIN_BODY_BYTES_PER_SECOND: '1000',
});
const url = 'http://127.0.0.1:18471';
const admin = 'http://127.0.0.1:18472';
let api: AppProcess;
let root: string;
let writer: string;
let nobody: string;

beforeAll(async () => {
  api = startApp('api', settings);
  await waitFor('the api to be ready', async () => ((await fetch(`${url}/readyz`).catch(() => null))?.status === 200 ? true : undefined), 60_000, 250);
  root = await bootstrapAdmin(settings);
  writer = await waitFor(
    'the admin key to work',
    () => createUser(url, root, 'writer', [{ match: 'prefix', value: 'edge.', access: 'rw' }]).catch(() => undefined),
    20_000,
    250,
  );
  nobody = await createUser(url, root, 'nobody', [{ match: 'prefix', value: 'edge.', access: 'r' }]);
});
afterAll(async () => {
  await api?.stop();
});

/** Sends a request head (and optionally the start of a body), then waits for the answer or the close. */
function openRequest(
  head: string,
  options: { trickle?: { everyMs: number; bytes: number } } = {},
): Promise<{ status: number; raw: string; closedAfterMs: number; closedAfterAnswerMs: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(18471, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    let answeredAt = Number.NaN;
    socket.on('data', (d) => {
      if (chunks.length === 0) answeredAt = performance.now();
      chunks.push(d);
    });
    socket.on('error', () => undefined); // a reset still ends in 'close'
    socket.on('close', () => {
      clearInterval(timer);
      const raw = Buffer.concat(chunks).toString('latin1');
      const closedAt = performance.now();
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0),
        raw,
        closedAfterMs: closedAt - started,
        closedAfterAnswerMs: closedAt - answeredAt,
      });
    });
    socket.write(head, (e) => {
      if (e) reject(e);
    });
    if (options.trickle) {
      const { everyMs, bytes } = options.trickle;
      timer = setInterval(() => {
        if (!socket.destroyed) socket.write('x'.repeat(bytes));
      }, everyMs);
    }
  });
}

const bodyOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { type: string; status: number; detail: string };

describe('the api edge', () => {
  it('refuses a 16 MiB JSON body to an account route with 413 as soon as its Content-Length shows it, without reading it', async () => {
    // Only the head is sent: the answer cannot wait for the body.
    const res = await openRequest(
      `POST /api/v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${root}\r\nContent-Type: application/json\r\nContent-Length: ${16 * 1024 * 1024}\r\n\r\n`,
    );
    expect(res.status).toBe(413);
    expect(res.raw).toMatch(/content-type: application\/problem\+json/i);
    expect(bodyOf(res.raw)).toMatchObject({ type: '/problems/payload-too-large', status: 413 });
    expect(res.raw).toMatch(/connection: close/i);
    // Closed with the answer, not held until the idle timeout (1500 ms after the last byte), however loaded the machine.
    expect(res.closedAfterAnswerMs).toBeLessThan(1000);
    // A small body is still accepted.
    expect((await call(`${url}/api/v1/users`, root, { method: 'POST', body: { user_name: 'small-body' } })).status).toBe(201);
  });

  it('refuses a chunked account body once it passes the small limit', async () => {
    const res = await fetch(`${url}/api/v1/users`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${root}`, 'Content-Type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(`{"user_name":"${'a'.repeat(20_000)}"}`));
          c.close();
        },
      }),
      duplex: 'half',
    });
    expect(res.status).toBe(413);
  });

  it('answers a long URL with 414 problem+json that says long selectors go in a body', async () => {
    const res = await fetch(`${url}/api/v1/tasks?status=${'x'.repeat(9000)}`, { headers: { Authorization: `Bearer ${writer}` } });
    expect(res.status).toBe(414);
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
    expect(await res.json()).toMatchObject({ type: '/problems/uri-too-long', status: 414, detail: expect.stringMatching(/request body/) });
  });

  it('answers headers over MERIDIAN_MAX_HEADER_BYTES with 431 problem+json and Connection: close, not a bare reset', async () => {
    const res = await rawRequest(url, Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(20_000)}\r\n\r\n`));
    expect(res.status).toBe(431);
    expect(res.raw).toMatch(/connection: close/i);
    expect(bodyOf(res.raw)).toMatchObject({ type: '/problems/header-too-large', status: 431 });
    const malformed = await rawRequest(url, Buffer.from('NOT HTTP AT ALL\r\n\r\n'));
    expect(malformed.status).toBe(400);
    expect(bodyOf(malformed.raw)).toMatchObject({ type: '/problems/validation', status: 400 });
  });

  it('closes an upload trickling just under the idle timeout once its average rate stays under the minimum', async () => {
    const res = await openRequest(
      `POST /api/v1/metrics_file_upload?metric_name=edge.trickle HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${writer}\r\nContent-Type: text/csv\r\nContent-Length: 1000000\r\n\r\n`,
      { trickle: { everyMs: 1000, bytes: 10 } },
    );
    expect(res.status).toBe(0); // closed, no answer: the handler sees an aborted upload and discards it
    expect(res.closedAfterMs).toBeGreaterThan(1500);
    expect(res.closedAfterMs).toBeLessThan(10_000);
    expect(api.output()).toMatch(/slower than MERIDIAN_HTTP_MIN_BODY_BYTES_PER_SECOND/);
    // A silent one is cut by the idle timeout.
    const silent = await openRequest(
      `POST /api/v1/metrics_file_upload?metric_name=edge.silent HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${writer}\r\nContent-Length: 100\r\n\r\n`,
    );
    expect(silent.status).toBe(0);
    expect(silent.closedAfterMs).toBeLessThan(10_000);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it('refuses both uploads with 403 before reading a byte when the caller can write no metric', async () => {
    for (const path of ['/api/v1/metrics_file_upload', '/api/v1/metrics/upload']) {
      const res = await openRequest(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${nobody}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`,
      );
      expect(res.status, path).toBe(403);
      expect(bodyOf(res.raw)).toMatchObject({ type: '/problems/forbidden' });
      expect(res.closedAfterAnswerMs).toBeLessThan(1000);
    }
  });

  it('answers a new API key with Cache-Control: no-store', async () => {
    const user = await call(`${url}/api/v1/users`, root, { method: 'POST', body: { user_name: 'keyed' } });
    expect(user.status).toBe(201);
    expect(user.headers.get('cache-control')).toBe('no-store');
    const key = await call(`${url}/api/v1/api_keys`, writer, { method: 'POST' });
    expect(key.status).toBe(201);
    expect(key.headers.get('cache-control')).toBe('no-store');
  });

  it('serves /metrics and the detailed /readyz on the admin listener only; the public /readyz names no internals', async () => {
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    const metrics = await fetch(`${admin}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/meridian_http_requests_total/);
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({
      status: 'ready',
      checks: { kafka: { status: 'up' }, clickhouse: { status: 'up' }, minio: { status: 'up' }, accounts: { status: 'up' }, tasks: { status: 'up' } },
    }); // files: a ClickHouse read model, no fold in the api
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    expect((await fetch(`${admin}/api/v1/users`)).status).toBe(404);
    const doc = (await (await fetch(`${url}/api/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(doc.paths['/metrics']).toBeUndefined();
  });
});
