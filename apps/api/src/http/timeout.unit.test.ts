import Koa from 'koa';
import Router, { type RouterMiddleware } from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError, type UserRecord } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { serve, type Served } from '../../../../test/support/http.ts';
import { problemMiddleware } from './problem.ts';
import { rateLimiter } from './rate-limit.ts';
import { requestContext } from './request-context.ts';
import { defineRoute, mountRoutes } from './route.ts';
import { requestTimeout } from './timeout.ts';

const logger = createLogger({ name: 'test', level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let served: Served;
const seen: { aborted?: boolean; lateError?: boolean } = {};
// /slow is held until the test lets it go, so an answer that arrives first can only be the timeout's.
let releaseSlow!: () => void;
const slowHeld = new Promise<void>((resolve) => {
  releaseSlow = resolve;
});
let slowDone: Promise<void>;

beforeAll(async () => {
  const app = new Koa();
  app.silent = true;
  const router = new Router();
  const user = { user_name: 'ada', is_admin: false } as unknown as UserRecord;
  mountRoutes(
    router,
    [
      defineRoute({
        method: 'GET',
        path: '/slow',
        operationId: 'slow',
        summary: '',
        tags: [],
        auth: 'public',
        responses: {},
        handler: async (ctx) => {
          const signal = ctx.state.signal as AbortSignal;
          slowDone = slowHeld.then(() => {
            seen.aborted = signal.aborted;
          });
          await slowDone;
          ctx.body = { late: true };
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/slow-fail',
        operationId: 'slowFail',
        summary: '',
        tags: [],
        auth: 'public',
        responses: {},
        handler: async () => {
          await sleep(200);
          seen.lateError = true;
          throw new Error('SELECT 1 failed late');
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/stream',
        operationId: 'stream',
        summary: '',
        tags: [],
        auth: 'public',
        responses: {},
        streaming: true,
        handler: async (ctx) => {
          await sleep(300);
          ctx.body = { streamed: true };
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/waits',
        operationId: 'waits',
        summary: '',
        tags: [],
        auth: 'public',
        responses: {},
        handler: async (ctx) => {
          // Extends before its first await, as the long-poll does when the task is at hand; it waits
          // three times the 100 ms deadline and extends by far more, so a busy machine cannot make it late.
          (ctx.state.extendTimeout as (ms: number) => void)(60_000);
          await sleep(300);
          ctx.body = { waited: true };
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/fast',
        operationId: 'fast',
        summary: '',
        tags: [],
        auth: 'public',
        responses: {},
        handler: (ctx) => {
          ctx.body = { ok: true };
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/mine',
        operationId: 'mine',
        summary: '',
        tags: [],
        auth: 'user',
        responses: {},
        handler: (ctx) => {
          ctx.body = { ok: true };
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/stream-mine',
        operationId: 'streamMine',
        summary: '',
        tags: [],
        auth: 'user',
        responses: {},
        streaming: true,
        handler: (ctx) => {
          ctx.body = { ok: true };
        },
      }),
    ],
    (ctx) => {
      if (ctx.get('Authorization') !== 'Bearer k') throw new DomainError('unauthenticated', 'no');
      return user;
    },
    (async (_ctx: unknown, next: () => Promise<void>) => next()) as RouterMiddleware,
    {
      timeout: requestTimeout(100, logger) as unknown as RouterMiddleware,
      rateLimit: rateLimiter({ ratePerSecond: 0.001, burst: 2 }),
    },
  );
  app.use(requestContext(logger));
  app.use(problemMiddleware(logger));
  app.use(router.routes()).use(router.allowedMethods());
  served = await serve(app);
});
afterAll(() => served.close());

describe('request timeout', () => {
  it('answers 503 /problems/timeout with Retry-After once a non-streaming route runs too long, and aborts its signal', async () => {
    const res = await fetch(`${served.url}/slow`); // answered while its handler is still held
    expect(seen.aborted).toBeUndefined();
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
    expect(await res.json()).toMatchObject({ type: '/problems/timeout', status: 503, title: 'Request timed out' });
    releaseSlow();
    await slowDone;
    expect(seen.aborted).toBe(true);
  });

  it('a handler failing after its timeout is logged, never an unhandled rejection', async () => {
    const res = await fetch(`${served.url}/slow-fail`);
    expect(res.status).toBe(503);
    await sleep(250);
    expect(seen.lateError).toBe(true); // and the process is still here
    expect((await fetch(`${served.url}/fast`)).status).toBe(200);
  });

  it('a route that waits on purpose extends its own deadline', async () => {
    const res = await fetch(`${served.url}/waits`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ waited: true });
  });

  it('exempts streaming routes', async () => {
    const res = await fetch(`${served.url}/stream`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ streamed: true });
  });
});

describe('rate limit in mountRoutes', () => {
  it('applies after authentication to every non-public route, streaming ones included', async () => {
    const auth = { headers: { Authorization: 'Bearer k' } };
    expect((await fetch(`${served.url}/mine`)).status).toBe(401); // no bucket spent without a key
    const first = await fetch(`${served.url}/mine`, auth);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('2');
    expect(first.headers.get('ratelimit-remaining')).toBe('1');
    expect((await fetch(`${served.url}/stream-mine`, auth)).status).toBe(200);
    const refused = await fetch(`${served.url}/stream-mine`, auth);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(await refused.json()).toMatchObject({ type: '/problems/rate-limited', status: 429 });
    expect((await fetch(`${served.url}/fast`)).headers.get('ratelimit-limit')).toBeNull(); // public: no limit
  });
});
