import type { Context, Next } from 'koa';
import { DomainError, InfrastructureError, type FieldError } from '@meridian/domain';
import type { Logger } from '@meridian/observability';

/** The stable problem types of RFC 9457 bodies; documented in the OpenAPI document. */
export const problemTypes = {
  validation: { status: 400, title: 'Invalid request' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  not_implemented: { status: 501, title: 'Not implemented' },
  conflict: { status: 409, title: 'Conflict' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  rate_limited: { status: 429, title: 'Too many requests' },
  too_many: { status: 429, title: 'Too many at once' },
  limit_reached: { status: 409, title: 'Limit reached' },
  internal: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'Dependency unavailable' },
  range_not_satisfiable: { status: 416, title: 'Range not satisfiable' },
  timeout: { status: 503, title: 'Request timed out' },
  request_timeout: { status: 408, title: 'Request not received in time' },
  uri_too_long: { status: 414, title: 'URI too long' },
  header_too_large: { status: 431, title: 'Request header fields too large' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemType = keyof typeof problemTypes;

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  request_id?: string;
  errors?: readonly FieldError[];
};

export function problemTypeUri(type: ProblemType): string {
  return `/problems/${type.replace(/_/g, '-')}`;
}

export function writeProblem(ctx: Context, type: ProblemType, detail: string, errors?: readonly FieldError[]): void {
  const { status, title } = problemTypes[type];
  const body: Problem = { type: problemTypeUri(type), title, status, detail, instance: ctx.path, request_id: ctx.state.requestId };
  if (errors && errors.length > 0) body.errors = errors;
  ctx.status = status;
  ctx.type = 'application/problem+json';
  ctx.body = body;
  if (type === 'unauthenticated') ctx.set('WWW-Authenticate', 'Bearer realm="meridian"');
  if (type === 'unavailable' || type === 'timeout' || type === 'too_many') ctx.set('Retry-After', '1');
}

/** HTTP errors thrown by Koa's own helpers and body parsers (ctx.throw, koa-body). */
type HttpishError = Error & { status?: number; statusCode?: number; expose?: boolean; headers?: Record<string, string> };

function typeForStatus(status: number): ProblemType {
  const found = (Object.keys(problemTypes) as ProblemType[]).find((k) => problemTypes[k].status === status);
  if (found) return found;
  return status >= 500 ? 'internal' : 'validation';
}

/**
 * Mounted first: every error becomes problem+json. 4xx details are shown to the caller;
 * 5xx details are logged with the request id and never sent (no stack traces, no SQL).
 */
export function problemMiddleware(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
      // Routing outcomes without a body (unknown route, wrong method) get a problem body too;
      // the router has already set Allow on 405.
      if (ctx.status >= 400 && ctx.body == null) {
        const type = typeForStatus(ctx.status);
        writeProblem(ctx, type, type === 'not_found' ? `no route for ${ctx.method} ${ctx.path}` : `${ctx.method} is not allowed on ${ctx.path}`);
      }
    } catch (error) {
      // Refused before its body was read (401, 403, 413...): close the connection after the
      // answer rather than read and discard the rest of the body.
      if (!ctx.req.complete) ctx.set('Connection', 'close');
      if (error instanceof DomainError) {
        writeProblem(ctx, error.code, error.message, error.errors);
        return;
      }
      if (error instanceof InfrastructureError) {
        ((ctx.state.log as Logger | undefined) ?? logger).warn({ err: error, dependency: error.dependency }, 'a dependency failed the request');
        writeProblem(
          ctx,
          error.retriable ? 'unavailable' : 'internal',
          error.retriable ? error.message : 'an internal error occurred; see the logs with this request id',
        );
        return;
      }
      const err = error as HttpishError;
      const status = err.status ?? err.statusCode ?? 500;
      if (status >= 400 && status < 500) {
        writeProblem(ctx, typeForStatus(status), err.expose === false ? problemTypes[typeForStatus(status)].title : err.message);
        for (const [k, v] of Object.entries(err.headers ?? {})) ctx.set(k, v);
        return;
      }
      ((ctx.state.log as Logger | undefined) ?? logger).error({ err }, 'request failed');
      writeProblem(
        ctx,
        status === 503 ? 'unavailable' : 'internal',
        status === 503 ? err.message : 'an internal error occurred; see the logs with this request id',
      );
    }
  };
}
