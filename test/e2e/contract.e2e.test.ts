import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileErrors, validate } from '@readme/openapi-parser';
import { buildApi, createApp } from '@meridian/api';
import { formatTimestamp } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { createPlatform } from '../support/platform.ts';
import { createApiMetrics } from '../../apps/api/src/observability/metrics.ts';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { serve } from '../support/http.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';
import { inertApiDeps } from '../../apps/api/src/openapi/inert-deps.ts';

// A small bucket so a burst is cheap to provoke: 20 at once, 5 per second after that.
const settings = isolatedSettings({ MERIDIAN_RATE_LIMIT_PER_SECOND: '5', MERIDIAN_RATE_LIMIT_BURST: '20' });
const logger = createLogger({ name: 'test', level: 'silent' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let root: string;
let writer: string;

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'contract.', access: 'rw' }]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

/** The value of one sample of a Prometheus text exposition, 0 when absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe('the contract', () => {
  it('GET /api/v1/openapi.json validates as OpenAPI 3.1 and documents the limits, /metrics and /docs', async () => {
    const res = await fetch(`${api.url}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, { description: string; headers?: Record<string, unknown> }> }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(result.warnings).toEqual([]);

    expect(doc.paths['/metrics']?.get).toBeDefined();
    expect(doc.paths['/docs']?.get).toBeDefined();
    expect(doc.paths['/docs/{asset}']?.get).toBeDefined();
    const listTasks = doc.paths['/api/v1/tasks']!.get!.responses;
    expect(listTasks['429']?.headers).toHaveProperty('Retry-After');
    expect(listTasks['200']?.headers).toHaveProperty('RateLimit-Remaining');
    expect(listTasks['503']?.description).toMatch(/\/problems\/timeout/);
    // Streaming uploads are exempt from the timeout: their 503 is the event log's.
    const upload = doc.paths['/api/v1/metrics/upload']!.post!.responses;
    expect(upload['503']?.description).not.toMatch(/timeout/);
    expect(upload['429']).toBeDefined();
  });

  it('a small JSON body that does not decode as its Content-Encoding says is a 400 problem, and a real gzip body is read', async () => {
    const post = (body: Buffer, encoding: string) =>
      fetch(`${api.url}/api/v1/users`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${root}`, 'Content-Type': 'application/json', 'Content-Encoding': encoding },
        body,
      });
    const plain = Buffer.from(JSON.stringify({ user_name: 'gzipped' }));
    for (const encoding of ['gzip', 'deflate']) {
      const res = await post(plain, encoding);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as { detail: string }).detail).toBe(`the body does not decode as its Content-Encoding (${encoding}) says`);
    }
    expect((await post((await import('node:zlib')).gzipSync(plain), 'gzip')).status).toBe(201);
  });

  it('unknown routes get a 404 problem; a wrong method gets 405 with Allow', async () => {
    for (const path of ['/nowhere', '/api/v1/nothing/here', '/api/v2/users']) {
      const res = await call(`${api.url}${path}`, root);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.json).toMatchObject({ type: '/problems/not-found', status: 404, request_id: res.headers.get('x-request-id') });
    }
    for (const [method, path, allowed] of [
      ['DELETE', '/api/v1/tasks', /GET/],
      ['PATCH', '/api/v1/users', /GET.*POST|POST.*GET/],
      ['POST', '/metrics', /GET/],
    ] as const) {
      const res = await call(`${api.url}${path}`, root, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow')).toMatch(allowed);
      expect(res.json).toMatchObject({ type: '/problems/method-not-allowed', status: 405 });
    }
  });

  it('a burst over the rate limit gets 429 with Retry-After; every authenticated answer carries RateLimit headers', async () => {
    const burster = await createUser(api.url, root, 'burster', []);
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 30 }, () => call(`${api.url}/api/v1/users`, burster)));
    const burstSeconds = (performance.now() - started) / 1000;
    const ok = answers.filter((r) => r.status === 200);
    const limited = answers.filter((r) => r.status === 429);
    expect(ok.length + limited.length).toBe(30);
    expect(ok.length).toBeGreaterThanOrEqual(20);
    // 20 at once, plus at most what refilled at 5/s while the burst was being served (on a
    // loaded machine serving 30 requests can take a second or more).
    expect(ok.length).toBeLessThanOrEqual(20 + Math.floor(5 * burstSeconds));
    for (const r of [...ok, ...limited]) {
      expect(r.headers.get('ratelimit-limit')).toBe('20');
      expect(Number(r.headers.get('ratelimit-remaining'))).toBeGreaterThanOrEqual(0);
      expect(Number(r.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    }
    for (const r of limited) {
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.headers.get('content-type')).toMatch(/problem\+json/);
      expect(r.json).toMatchObject({ type: '/problems/rate-limited', status: 429 });
    }
    // The bucket is per user: the others are unaffected, and public routes are not limited.
    expect((await call(`${api.url}/api/v1/users`, writer)).status).toBe(200);
    expect((await fetch(`${api.url}/healthz`)).headers.get('ratelimit-limit')).toBeNull();
    // It refills: after Retry-After the user is served again.
    await new Promise((r) => setTimeout(r, Number(limited[0]!.headers.get('retry-after')) * 1000));
    expect((await call(`${api.url}/api/v1/users`, burster)).status).toBe(200);
  });

  it('/metrics shows the upload and ingest counters moving during an upload', async () => {
    const scrape = async () => {
      const res = await fetch(`${api.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      return res.text();
    };
    const before = await scrape();
    const values = Array.from({ length: 250 }, (_, i) => ({ timestamp: formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000), value: i }));
    const res = await call(`${api.url}/api/v1/metrics/upload`, writer, { method: 'POST', body: { metric_name: 'contract.points', values } });
    expect(res.status).toBe(202);
    const accepted = await scrape();
    expect(sample(accepted, 'meridian_uploads_accepted_total{source="json_body"}')).toBe(
      sample(before, 'meridian_uploads_accepted_total{source="json_body"}') + 1,
    );
    expect(sample(accepted, 'meridian_upload_points_accepted_total')).toBe(sample(before, 'meridian_upload_points_accepted_total') + 250);
    expect(sample(accepted, 'meridian_upload_bytes_accepted_total{source="json_body"}')).toBeGreaterThan(
      sample(before, 'meridian_upload_bytes_accepted_total{source="json_body"}'),
    );

    expect((await waitForTask(api.url, writer, res.json.task_id)).status).toBe('succeeded');
    const done = await waitFor("the api to fold the task's success", async () => {
      const text = await scrape();
      return sample(text, 'meridian_points_ingested_total') >= sample(before, 'meridian_points_ingested_total') + 250 ? text : undefined;
    });
    expect(sample(done, 'meridian_points_ingested_total')).toBe(sample(before, 'meridian_points_ingested_total') + 250);
    expect(sample(done, 'meridian_tasks{status="succeeded"}')).toBe(sample(before, 'meridian_tasks{status="succeeded"}') + 1);
    expect(sample(done, 'meridian_http_requests_total{method="POST",route="/api/v1/metrics/upload",status="202"}')).toBeGreaterThanOrEqual(1);
    expect(done).toMatch(/meridian_http_request_duration_seconds_bucket\{le="0.1",method="GET",route="\/api\/v1\/tasks\/\{task_id\}",status="200"\}/);
    expect(done).toContain('process_resident_memory_bytes');
    // Freshness and lag: nothing waits once the task succeeded and the groups caught up.
    expect(sample(done, 'meridian_projection_pending_seconds')).toBe(0);
    const settled = await waitFor(
      'the ingest groups to commit their offsets',
      async () => {
        const text = await scrape();
        const lags = [
          ...text.matchAll(
            /^meridian_consumer_lag\{group="[^"]*ingest-(commands|projector|tasks-projector|files-projector)",topic="[^"]*",partition="\d+"\} (\d+)$/gm,
          ),
        ];
        return new Set(lags.map((m) => m[1])).size === 4 && lags.every((m) => m[2] === '0') ? lags : undefined;
      },
      20_000,
      250,
    );
    expect(new Set(settled.map((m) => m[1]))).toEqual(new Set(['commands', 'projector', 'tasks-projector', 'files-projector']));
  });

  it('/docs is served from this origin under a self-only Content-Security-Policy; its files come from a fixed list', async () => {
    const page = await fetch(`${api.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).not.toMatch(/https?:|unsafe/);
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<style|https?:\/\//); // no inline code, nothing off-origin
    for (const src of [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)) {
      const asset = await fetch(`${api.url}${src}`);
      expect(asset.status, src).toBe(200);
      await asset.arrayBuffer();
    }
    expect((await fetch(`${api.url}/docs/swagger-ui-bundle.js`)).headers.get('content-type')).toMatch(/javascript/);
    for (const probe of ['/docs/..%2Fpackage.json', '/docs/package.json', '/docs/index.html', '/docs/%2E%2E%2F%2E%2E%2Fpackage.json']) {
      const res = await fetch(`${api.url}${probe}`);
      expect(res.status, probe).toBe(404);
      expect(await res.text()).not.toMatch(/swagger-ui-dist/);
    }
  });

  it('a request past MERIDIAN_REQUEST_TIMEOUT_MS gets 503 /problems/timeout with Retry-After', async () => {
    // A "ClickHouse" that accepts connections and never answers: /readyz waits on it.
    const sockets = new Set<Socket>();
    const silent: Server = createServer((s) => {
      sockets.add(s);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    const slow = isolatedSettings({ CLICKHOUSE_URL: `http://127.0.0.1:${port}`, MERIDIAN_READY_TIMEOUT_MS: '10000', MERIDIAN_REQUEST_TIMEOUT_MS: '300' });
    const platform = createPlatform(slow, logger, 'api');
    const slowApi = await buildApi(platform);
    const served = await serve(slowApi.app);
    try {
      const started = Date.now();
      const res = await fetch(`${served.url}/readyz`);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toMatchObject({ type: '/problems/timeout', status: 503 });
      expect((await fetch(`${served.url}/healthz`)).status).toBe(200);
    } finally {
      for (const s of sockets) s.destroy();
      await served.close();
      await slowApi.stop();
      await platform.close();
      await new Promise((r) => silent.close(r));
    }
  });

  it('a 5xx body never carries a stack trace or SQL, only the request id', async () => {
    // The real app, with a tasks fold that fails the way a driver error would.
    const failure = new Error('Code: 62. DB::Exception: Syntax error: SELECT metric_name FROM meridian.points WHERE 1 = 1');
    const metrics = createApiMetrics({
      processMetrics: false,
      tasks: () => {
        throw failure;
      },
    });
    // The inert dependencies the OpenAPI document is built on: only the /metrics route runs here.
    const app = createApp({
      ...inertApiDeps(),
      logger,
      metrics,
    });
    const served = await serve(app);
    try {
      const res = await fetch(`${served.url}/metrics`, { headers: { 'X-Request-Id': 'find-me-42' } });
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      const text = await res.text();
      expect(text).not.toMatch(/SELECT|DB::Exception|meridian\.points|\bat\s+\S+\s+\(|\.ts:\d+/);
      expect(JSON.parse(text)).toEqual({
        type: '/problems/internal',
        title: 'Internal error',
        status: 500,
        detail: expect.any(String),
        instance: '/metrics',
        request_id: 'find-me-42',
      });
    } finally {
      await served.close();
    }
  });
});
