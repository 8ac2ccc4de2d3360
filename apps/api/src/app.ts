import Koa from 'koa';
import Router, { type RouterMiddleware } from '@koa/router';
import { koaBody } from 'koa-body';
import type { Logger } from '@meridian/observability';
import type { AccountsCommands } from './accounts/commands.ts';
import { bearerAuthenticator } from './http/authenticate.ts';
import { problemMiddleware } from './http/problem.ts';
import type { Probe } from './http/readiness.ts';
import { requestContext } from './http/request-context.ts';
import { mountRoutes, type RouteDef } from './http/route.ts';
import { apiKeyRoutes } from './routes/api-keys.ts';
import { taskRoutes, type TaskReads } from './routes/tasks.ts';
import { uploadRoutes, type UploadDeps } from './routes/uploads.ts';
import { healthRoutes } from './routes/health.ts';
import { openApiRoute } from './routes/openapi.ts';
import { userRoutes } from './routes/users.ts';

export type ApiDeps = {
  readonly logger: Logger;
  readonly probes: readonly Probe[];
  readonly readyTimeoutMs: number;
  readonly accounts: AccountsCommands & { readonly ready: boolean };
  readonly tasks: TaskReads;
  readonly uploads: UploadDeps;
};

export const API_VERSION = '1.0.0';

/** Every route the api serves, each described by its schemas (see http/route.ts). */
export function apiRoutes(deps: ApiDeps): RouteDef[] {
  const routes: RouteDef[] = [
    ...healthRoutes(deps.probes, deps.readyTimeoutMs),
    ...uploadRoutes(deps.uploads),
    ...taskRoutes(deps.tasks),
    ...userRoutes(deps.accounts),
    ...apiKeyRoutes(deps.accounts),
  ];
  routes.push(openApiRoute(() => routes, API_VERSION));
  return routes;
}

/** The router with every route mounted: authentication, validation, handler. */
export function buildRouter(deps: ApiDeps): Router {
  const router = new Router();
  const jsonBody = koaBody({ json: true, jsonStrict: true, jsonLimit: deps.uploads.limits.jsonBodyBytes, urlencoded: false, text: false, multipart: false });
  const authenticate = bearerAuthenticator(() => deps.accounts.state, () => deps.accounts.ready);
  mountRoutes(router, apiRoutes(deps), authenticate, jsonBody as unknown as RouterMiddleware);
  return router;
}

/** Wires middleware and routes; no I/O of its own beyond what deps do. */
export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true; // errors are logged by the problem middleware, with the request id
  app.use(requestContext(deps.logger));
  app.use(problemMiddleware(deps.logger));
  const router = buildRouter(deps);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
