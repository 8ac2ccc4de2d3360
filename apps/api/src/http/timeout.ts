import type { Context, Next } from 'koa';
import type { Logger } from '@meridian/observability';
import { writeProblem } from './problem.ts';

/**
 * The request timeout of non-streaming routes (streaming uploads and downloads are exempt:
 * see RouteDef.streaming). When the route has not finished within `ms`, the caller gets
 * 503 /problems/timeout with Retry-After at once; the handler's `ctx.state.signal` is aborted
 * so work that honours it stops, and whatever the handler does later is not sent (Koa
 * ignores status, headers and body once the response has gone).
 *
 * A handler that waits on purpose extends its deadline through `ctx.state.extendTimeout(ms)`
 * (see holdOpen).
 *
 * 503 rather than 504: the api is not a gateway, and 503 with Retry-After is what every
 * other "try again shortly" answer of this api is, so one client retry rule covers all.
 */
export function requestTimeout(ms: number, logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const controller = new AbortController();
    ctx.state.signal = controller.signal;
    let timer: NodeJS.Timeout | undefined;
    let deadline = performance.now() + ms;
    // Armed before the route runs: a handler may extend the deadline before its first await.
    const expired = new Promise<'expired'>((resolve) => {
      const arm = () => {
        timer = setTimeout(() => resolve('expired'), Math.max(0, deadline - performance.now()));
      };
      arm();
      // A route that waits on purpose (a long-poll) moves its deadline on by the wait it allows.
      ctx.state.extendTimeout = (extraMs: number) => {
        clearTimeout(timer);
        deadline += extraMs;
        arm();
      };
    });
    const done = Promise.resolve(next()).then(() => 'done' as const);
    try {
      const outcome = await Promise.race([done, expired]);
      if (outcome === 'expired') {
        controller.abort(new Error(`request timed out after ${ms} ms`));
        // The handler may still fail later: log it, never leave it unhandled.
        done.catch((error: unknown) => ((ctx.state.log as Logger | undefined) ?? logger).warn({ err: error }, 'request failed after its timeout'));
        writeProblem(ctx, 'timeout', `the request did not complete within ${ms} ms; retry later`);
      }
    } finally {
      clearTimeout(timer);
    }
  };
}
