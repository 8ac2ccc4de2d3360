import type { Context, Next } from 'koa';
import { writeProblem } from './problem.ts';

/**
 * Answers 414 problem+json to a request target longer than `maxBytes`, before any route
 * parses it. On a path in `bodyForms` (routes that also take their parameters as a POST body:
 * the metrics download) the answer names that form. (A request line and headers too long for
 * the server's maxHeaderSize never get here: http-server.ts answers them 431.)
 */
export function urlLengthLimit(maxBytes: number, bodyForms: readonly string[] = []) {
  return async (ctx: Context, next: Next) => {
    if (Buffer.byteLength(ctx.url) > maxBytes) {
      const what = `the request target is longer than ${maxBytes} bytes`;
      writeProblem(ctx, 'uri_too_long', bodyForms.includes(ctx.path) ? postFormDetail(what, ctx.path) : longTargetDetail(what));
      return;
    }
    await next();
  };
}

/** Says where long selectors belong, for both the 414 and the 431 answer. */
export function longTargetDetail(what: string): string {
  return `${what}; send long selectors (many metric names, long patterns) in a request body instead of the URL or headers`;
}

/** The 414 of a route that takes the same parameters as a POST body. */
function postFormDetail(what: string, path: string): string {
  return `${what}; send the same parameters as a POST ${path} body (application/x-www-form-urlencoded, exactly this query string, or JSON)`;
}

/**
 * The 431 of a request line and headers over maxHeaderBytes. Node refuses them before the
 * path is known, and the long selectors are most likely a download's list: named here.
 */
export function headerOverflowDetail(maxHeaderBytes: number): string {
  return (
    longTargetDetail(`the request line and headers are larger than ${maxHeaderBytes} bytes`) +
    ' (a metrics download: the same parameters as a POST /api/v1/metrics/download body)'
  );
}
