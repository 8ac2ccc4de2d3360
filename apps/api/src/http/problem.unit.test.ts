import Koa from 'koa';
import Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError, InfrastructureError, unavailable } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { serve, type Served } from '../../../../test/support/http.ts';
import { problemMiddleware } from './problem.ts';
import { requestContext } from './request-context.ts';

const logger = createLogger({ name: 'test', level: 'silent' });
let served: Served;

beforeAll(async () => {
  const app = new Koa();
  app.silent = true;
  const router = new Router();
  router.get('/domain', () => {
    throw new DomainError('validation', 'max_rows must be a positive integer', [{ field: 'max_rows', reason: 'not an integer' }]);
  });
  router.get('/boom', () => {
    throw new Error('SELECT secret FROM table -- at Object.<anonymous> (/srv/app.ts:1:1)');
  });
  router.get('/down', () => {
    throw unavailable('clickhouse', 'the metric store did not answer; retry later', new Error('connect ECONNREFUSED 10.0.0.7:8123'));
  });
  router.get('/broken', () => {
    throw new InfrastructureError('kafka', 'the broker refused the record: RECORD_LIST_TOO_LARGE at 10.0.0.8', { retriable: false });
  });
  router.get('/ok', (ctx) => {
    ctx.body = { ok: true };
  });
  app.use(requestContext(logger));
  app.use(problemMiddleware(logger));
  app.use(router.routes()).use(router.allowedMethods());
  served = await serve(app);
});
afterAll(() => served.close());

describe('problem+json error model', () => {
  it('maps a domain error to its status with the field errors', async () => {
    const res = await fetch(`${served.url}/domain`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as { errors: unknown; request_id: string };
    expect(body).toMatchObject({ type: '/problems/validation', status: 400, detail: 'max_rows must be a positive integer' });
    expect(body.errors).toEqual([{ field: 'max_rows', reason: 'not an integer' }]);
    expect(body.request_id).toBe(res.headers.get('x-request-id'));
  });

  it('answers a dependency that may come back 503 with Retry-After and its message, and one that will not 500 without it', async () => {
    const down = await fetch(`${served.url}/down`);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('1');
    const downText = await down.text();
    expect(JSON.parse(downText)).toMatchObject({ type: '/problems/unavailable', detail: 'the metric store did not answer; retry later' });
    expect(downText).not.toContain('10.0.0.7');
    const broken = await fetch(`${served.url}/broken`);
    expect(broken.status).toBe(500);
    const brokenText = await broken.text();
    expect(JSON.parse(brokenText)).toMatchObject({ type: '/problems/internal' });
    expect(brokenText).not.toContain('10.0.0.8');
  });

  it('hides the message of an unexpected error behind a 500 with the request id', async () => {
    const res = await fetch(`${served.url}/boom`, { headers: { 'X-Request-Id': 'trace-me-1' } });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toMatch(/SELECT|secret|app\.ts/);
    expect(JSON.parse(text)).toMatchObject({ type: '/problems/internal', request_id: 'trace-me-1' });
  });

  it('answers an unknown route with a 404 problem', async () => {
    const res = await fetch(`${served.url}/nowhere`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ type: '/problems/not-found', status: 404 });
  });

  it('answers a wrong method with 405, an Allow header and a problem body', async () => {
    const res = await fetch(`${served.url}/ok`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/GET/);
    expect(await res.json()).toMatchObject({ type: '/problems/method-not-allowed', status: 405 });
  });

  it('replaces a malformed X-Request-Id with a generated one', async () => {
    const res = await fetch(`${served.url}/ok`, { headers: { 'X-Request-Id': 'bad id with spaces' } });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
