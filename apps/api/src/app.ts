import Koa from 'koa';
import type { Logger } from '@meridian/observability';
import { problemMiddleware } from './http/problem.ts';
import { requestContext } from './http/request-context.ts';
import type { Probe } from './http/readiness.ts';
import { healthRoutes } from './routes/health.ts';

export type ApiDeps = {
  readonly logger: Logger;
  readonly probes: readonly Probe[];
  readonly readyTimeoutMs: number;
};

/** Wires middleware and routes; no I/O of its own, so tests call app.callback() without a port. */
export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true; // errors are logged by the problem middleware, with the request id
  app.use(requestContext(deps.logger));
  app.use(problemMiddleware(deps.logger));
  const health = healthRoutes(deps.probes, deps.readyTimeoutMs);
  app.use(health.routes());
  app.use(health.allowedMethods());
  return app;
}
