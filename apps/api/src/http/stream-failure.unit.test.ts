import { PassThrough } from 'node:stream';
import Koa from 'koa';
import Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@meridian/observability';
import { serve, type Served } from '../../../../test/support/http.ts';
import { problemMiddleware } from './problem.ts';
import { requestContext } from './request-context.ts';
import { answerStreamFailures } from './stream-failure.ts';

const logger = createLogger({ name: 'test', level: 'silent' });
let served: Served;

/** A body the route hands over, which fails once the route has returned: after `first` is written, if any. */
function failingBody(first: string | null): PassThrough {
  const body = new PassThrough();
  setTimeout(() => {
    if (first !== null) body.write(first);
    setTimeout(() => body.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), 50);
  }, 50);
  return body;
}

beforeAll(async () => {
  const app = new Koa();
  app.silent = true;
  answerStreamFailures(app, logger);
  const router = new Router();
  router.get('/before-head', (ctx) => {
    ctx.set('Content-Disposition', 'attachment; filename="x.csv"');
    ctx.type = 'text/csv';
    ctx.body = failingBody(null);
  });
  router.get('/after-head', (ctx) => {
    ctx.type = 'text/csv';
    ctx.body = failingBody('metric_name,timestamp\n');
  });
  app.use(requestContext(logger));
  app.use(problemMiddleware(logger));
  app.use(router.routes());
  served = await serve(app);
});
afterAll(() => served.close());

describe('a streamed body that fails after the route returned', () => {
  it("before its first byte: 503 problem+json with Retry-After and the request id, not Koa's text/plain 500", async () => {
    const res = await fetch(`${served.url}/before-head`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('content-disposition')).toBeNull();
    const body = (await res.json()) as { type: string; request_id: string };
    expect(body.type).toBe('/problems/unavailable');
    expect(res.headers.get('x-request-id')).toBe(body.request_id);
  });

  it('after its head: the transfer fails at the client (it neither hangs nor looks whole)', async () => {
    const res = await fetch(`${served.url}/after-head`);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });
});
