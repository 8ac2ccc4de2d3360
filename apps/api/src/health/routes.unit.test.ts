import Koa from 'koa';
import Router from '@koa/router';
import { describe, expect, it } from 'vitest';
import type { UserRecord } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { inject, type Listener } from '../../../../test/support/inject.ts';
import { problemMiddleware } from '../http/problem.ts';
import { requestContext } from '../http/request-context.ts';
import { mountRoutes, type RouteDef } from '../http/route.ts';
import { detailedReadinessRoute, healthRoutes } from './routes.ts';

/** /healthz and /readyz through Koa's callback (no port), with probes in memory. */
const logger = createLogger({ name: 'test', level: 'silent' });
const SECRET = 'connect ECONNREFUSED 10.1.2.3:9092';
const probes = [
  {
    name: 'kafka',
    check: async () => {
      throw new Error(SECRET);
    },
  },
  { name: 'clickhouse', check: async () => {} },
];

function appOf(routes: RouteDef[]): Listener {
  const app = new Koa();
  app.silent = true;
  app.use(requestContext(logger));
  app.use(problemMiddleware(logger));
  const router = new Router();
  mountRoutes(
    router,
    routes,
    () => ({}) as UserRecord,
    async (_ctx, next) => next(),
  );
  app.use(router.routes());
  return app.callback();
}

describe("health routes through Koa's callback", () => {
  it('/healthz answers while a dependency is down; /readyz names it down, with no address or error text', async () => {
    const app = appOf(healthRoutes(probes, 1000, logger));
    const live = await inject(app, { url: '/healthz' });
    expect(live.status).toBe(200);
    expect(live.json()).toEqual({ status: 'ok' });
    const ready = await inject(app, { url: '/readyz' });
    expect(ready.status).toBe(503);
    expect(ready.json()).toEqual({ status: 'unavailable', checks: { kafka: { status: 'down' }, clickhouse: { status: 'up' } } });
    expect(ready.body.toString()).not.toContain('10.1.2.3');
  });

  it("the admin listener's /readyz says why", async () => {
    const ready = await inject(appOf([detailedReadinessRoute(probes, 1000)]), { url: '/readyz' });
    expect(ready.status).toBe(503);
    expect(ready.json().checks.kafka).toEqual({ status: 'down', error: SECRET });
  });

  it('/readyz is 200 once every probe answers', async () => {
    const ready = await inject(appOf(healthRoutes([probes[1]!], 1000, logger)), { url: '/readyz' });
    expect(ready.status).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', checks: { clickhouse: { status: 'up' } } });
  });
});
