import Koa from 'koa';
import Router, { type RouterMiddleware } from '@koa/router';
import { koaBody } from 'koa-body';
import { validationError } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { AccountsCommands } from './accounts/commands.ts';
import { bearerAuthenticator } from './http/authenticate.ts';
import { problemMiddleware } from './http/problem.ts';
import { answerStreamFailures } from './http/stream-failure.ts';
import type { Probe } from '@meridian/runtime';
import { requestContext } from './http/request-context.ts';
import { mountRoutes, type RouteDef } from './http/route.ts';
import { rateLimiter } from './http/rate-limit.ts';
import { requestTimeout } from './http/timeout.ts';
import { urlLengthLimit } from './http/url-length.ts';
import type { ApiMetrics } from './observability/metrics.ts';
import { catalogRoute, type CatalogDeps } from './catalog/routes.ts';
import { consoleRoutes } from './console/routes.ts';
import { docsRoutes } from './openapi/docs-routes.ts';
import { metricsRoute } from './observability/routes.ts';
import { apiKeyRoutes } from './accounts/api-keys-routes.ts';
import { taskRoutes, type TaskReads } from './tasks/routes.ts';
import { uploadRoutes, type UploadDeps } from './uploads/routes.ts';
import { telemetryRoutes, type TelemetryDeps } from './telemetry/routes.ts';
import { DOWNLOAD_PATH, downloadRoutes, type DownloadDeps } from './downloads/routes.ts';
import { seriesRoute, type SeriesDeps } from './downloads/series-route.ts';
import { deletionRoutes, type DeletionDeps } from './deletions/routes.ts';
import { eventsRoute, type EventsDeps } from './events/routes.ts';
import type { FileDeps } from './files/deps.ts';
import { fileRoutes } from './files/routes.ts';
import { healthRoutes } from './health/routes.ts';
import { openApiRoute } from './openapi/document-routes.ts';
import { userRoutes } from './accounts/users-routes.ts';
import { retentionRoutes } from './accounts/retention-routes.ts';
import { prometheusRoutes } from './prometheus/routes.ts';
import type { PromqlDeps } from './prometheus/execute.ts';

export type ApiDeps = {
  readonly logger: Logger;
  readonly probes: readonly Probe[];
  readonly readyTimeoutMs: number;
  readonly accounts: AccountsCommands & { readonly ready: boolean };
  readonly tasks: TaskReads;
  readonly uploads: UploadDeps;
  /** The telemetry protocols' routes, on the push path; absent with the push path off. */
  readonly telemetry?: TelemetryDeps;
  /** Where metric downloads read from; the download route is mounted when given. */
  readonly download?: DownloadDeps;
  /** Deletions of points (POST /api/v1/metrics/delete); mounted when given. */
  readonly deletions?: DeletionDeps;
  /** Where sampled series (GET /api/v1/metrics/series) read from; mounted when given. */
  readonly series?: SeriesDeps;
  /** The Prometheus query API (/prometheus/api/v1: PromQL over the catalog's series); mounted when given. */
  readonly prometheus?: PromqlDeps;
  /** The metric catalog (GET /api/v1/metrics); mounted when given. */
  readonly catalog?: CatalogDeps;
  /** The event log's export (GET /api/v1/events, admins only); mounted when given. */
  readonly events?: EventsDeps;
  /** The file catalog, staging and blobs; the file routes are mounted when given. */
  readonly files?: FileDeps;
  /** Request timeout, per-user rate limit and key cap (MERIDIAN_REQUEST_TIMEOUT_MS, MERIDIAN_RATE_LIMIT_*, MERIDIAN_MAX_API_KEYS_PER_USER); none when left out. */
  readonly limits?: ApiLimits;
  /** The Prometheus registry and its recorders, served at /metrics. */
  readonly metrics?: ApiMetrics;
  /** Largest JSON body of the routes that take one (MERIDIAN_MAX_SMALL_JSON_BODY_BYTES); uploads read their own. */
  readonly smallJsonBodyBytes: number;
  /** Longest request target (MERIDIAN_MAX_URL_BYTES); no check when left out. */
  readonly maxUrlBytes?: number;
  /**
   * An admin listener serves /metrics and the detailed /readyz (admin-app.ts): then this app
   * answers /metrics with 404. Without one, /metrics stays here.
   */
  readonly adminListener?: boolean;
};

export type ApiLimits = {
  readonly requestTimeoutMs: number;
  /** Requests per second per user; 0 turns the rate limit off. */
  readonly rateLimitPerSecond: number;
  readonly rateLimitBurst: number;
  /** API keys a user may hold (MERIDIAN_MAX_API_KEYS_PER_USER). */
  readonly apiKeysPerUser: number;
};

export const API_VERSION = '1.0.0';

/** Every route the api serves, each described by its schemas (see http/route.ts). */
export function apiRoutes(deps: ApiDeps): RouteDef[] {
  const routes: RouteDef[] = [
    ...healthRoutes(deps.probes, deps.readyTimeoutMs, deps.logger),
    ...uploadRoutes(deps.uploads),
    ...(deps.telemetry ? telemetryRoutes(deps.telemetry) : []),
    ...(deps.download ? downloadRoutes(deps.download) : []),
    ...(deps.deletions ? deletionRoutes(deps.deletions) : []),
    ...(deps.series ? [seriesRoute(deps.series)] : []),
    ...(deps.catalog ? [catalogRoute(deps.catalog)] : []),
    ...(deps.prometheus ? prometheusRoutes(deps.prometheus) : []),
    ...(deps.events ? [eventsRoute(deps.events)] : []),
    ...(deps.files ? fileRoutes(deps.files) : []),
    ...taskRoutes(deps.tasks),
    ...userRoutes(deps.accounts),
    ...retentionRoutes(deps.accounts),
    ...apiKeyRoutes(deps.accounts, deps.limits?.apiKeysPerUser ?? Number.POSITIVE_INFINITY),
    ...(deps.adminListener ? [] : [metricsRoute(() => deps.metrics?.registry)]),
    ...docsRoutes(),
    ...consoleRoutes(),
  ];
  routes.push(openApiRoute(() => routes, API_VERSION));
  return routes;
}

/** The router with every route mounted: authentication, validation, handler. */
export function buildRouter(deps: ApiDeps): Router {
  const router = new Router();
  // Only small JSON bodies go through here (accounts, file metadata): the uploads read their own bodies.
  const jsonBody = smallJsonBody(deps.smallJsonBodyBytes);
  const authenticate = bearerAuthenticator(
    () => deps.accounts.state,
    () => deps.accounts.ready,
  );
  const limits = deps.limits;
  mountRoutes(router, apiRoutes(deps), authenticate, jsonBody, {
    ...(limits ? { timeout: requestTimeout(limits.requestTimeoutMs, deps.logger) as unknown as RouterMiddleware } : {}),
    ...(limits && limits.rateLimitPerSecond > 0 ? { rateLimit: rateLimiter({ ratePerSecond: limits.rateLimitPerSecond, burst: limits.rateLimitBurst }) } : {}),
  });
  return router;
}

/**
 * The small JSON bodies' parser. koa-body inflates a body sent with Content-Encoding gzip or
 * deflate; one whose bytes do not inflate fails in zlib with no HTTP status, which would be a
 * 500: it is the client's error, a 400 that says so. Errors after the body was parsed (the
 * route's) pass through untouched.
 */
function smallJsonBody(limit: number): RouterMiddleware {
  const parse = koaBody({ json: true, jsonStrict: true, jsonLimit: limit, urlencoded: false, text: false, multipart: false });
  return async (ctx, next) => {
    let parsed = false;
    try {
      await parse(ctx, () => {
        parsed = true;
        return next();
      });
    } catch (error) {
      if (parsed || !/^Z_/.test(String((error as { code?: unknown }).code))) throw error;
      throw validationError(`the body does not decode as its Content-Encoding (${ctx.get('Content-Encoding')}) says`, [
        { field: 'Content-Encoding', reason: 'the body is not in this encoding' },
      ]);
    }
  };
}

/**
 * The router answers a method that no route implements (TRACE, CONNECT) with 501. One error
 * model: that is 405 with Allow on a path that exists, and 404 on one that does not.
 */
async function unknownMethods(ctx: Koa.Context, next: Koa.Next): Promise<void> {
  await next();
  if (ctx.status !== 501 || ctx.body != null) return;
  const allow = ctx.response.get('Allow');
  if (allow) ctx.status = 405;
  else {
    ctx.remove('Allow');
    ctx.status = 404;
  }
}

/** Wires middleware and routes; no I/O of its own beyond what deps do. */
export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = false;
  app.silent = true; // errors are logged by the problem middleware, with the request id
  answerStreamFailures(app, deps.logger);
  app.use(requestContext(deps.logger));
  if (deps.metrics) app.use(deps.metrics.observeRequests);
  app.use(problemMiddleware(deps.logger));
  app.use(unknownMethods);
  if (deps.maxUrlBytes !== undefined) app.use(urlLengthLimit(deps.maxUrlBytes, deps.download ? [DOWNLOAD_PATH] : []));
  const router = buildRouter(deps);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
