import Koa from 'koa';
import Router, { type RouterMiddleware } from '@koa/router';
import type { Logger } from '@meridian/observability';
import { DomainError } from '@meridian/domain';
import { problemMiddleware } from './http/problem.ts';
import type { Probe } from '@meridian/runtime';
import { requestContext } from './http/request-context.ts';
import { mountRoutes } from './http/route.ts';
import type { ApiMetrics } from './observability/metrics.ts';
import { metricsRoute } from './observability/routes.ts';
import { detailedReadinessRoute } from './health/routes.ts';

export type AdminDeps = {
  readonly logger: Logger;
  readonly probes: readonly Probe[];
  readonly readyTimeoutMs: number;
  readonly metrics?: ApiMetrics;
};

/**
 * The app of the admin listener (MERIDIAN_ADMIN_HOST:MERIDIAN_ADMIN_PORT): /metrics and the
 * detailed /readyz, for scrapers and operators on a private address. No route here takes a
 * body or a key; everything else answers 404.
 */
export function createAdminApp(deps: AdminDeps): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true;
  app.use(requestContext(deps.logger));
  app.use(problemMiddleware(deps.logger));
  const router = new Router();
  const noUsers = () => {
    throw new DomainError('unauthenticated', 'the admin listener has no authenticated routes');
  };
  const noBodies: RouterMiddleware = () => {
    throw new DomainError('validation', 'the admin listener takes no request bodies');
  };
  mountRoutes(router, [metricsRoute(() => deps.metrics?.registry), detailedReadinessRoute(deps.probes, deps.readyTimeoutMs)], noUsers, noBodies);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
