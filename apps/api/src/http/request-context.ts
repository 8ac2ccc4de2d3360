import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '@meridian/observability';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Gives every request an id (the caller's X-Request-Id when it is well-formed, else a new
 * one), returns it as X-Request-Id, and logs one line per request with it. Handlers log
 * through ctx.state.log, a child logger that carries the id.
 */
export function requestContext(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    const given = ctx.get('X-Request-Id');
    const requestId = REQUEST_ID.test(given) ? given : randomUUID();
    const log = logger.child({ request_id: requestId });
    ctx.state.requestId = requestId;
    ctx.state.log = log;
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      const level = ctx.status >= 500 ? 'error' : 'info';
      log[level]({ method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
    }
  };
}
