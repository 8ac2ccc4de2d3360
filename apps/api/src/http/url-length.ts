import type { Context, Next } from 'koa';
import { writeProblem } from './problem.ts';

/**
 * Answers 414 problem+json to a request target longer than `maxBytes`, before any route
 * parses it. (A request line and headers too long for the server's maxHeaderSize never get
 * here: http-server.ts answers them 431.)
 */
export function urlLengthLimit(maxBytes: number) {
  return async (ctx: Context, next: Next) => {
    if (Buffer.byteLength(ctx.url) > maxBytes) {
      writeProblem(ctx, 'uri_too_long', longTargetDetail(`the request target is longer than ${maxBytes} bytes`));
      return;
    }
    await next();
  };
}

/** Says where long selectors belong, for both the 414 and the 431 answer. */
export function longTargetDetail(what: string): string {
  return `${what}; send long selectors (many metric names, long patterns) in a request body instead of the URL or headers`;
}
