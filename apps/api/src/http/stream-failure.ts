import type Koa from 'koa';
import type { Context } from 'koa';
import type { Logger } from '@meridian/observability';
import { writeProblem } from './problem.ts';

/**
 * A streamed body (a download's rows, an events export) that fails after its route returned,
 * say ClickHouse resetting mid-answer, reaches Koa's ctx.onerror rather than the problem
 * middleware. Koa's own answer would be a text/plain 500 before the head is sent, and nothing at
 * all after it (the response stays open until the idle timeout). Instead:
 * - before the head: 503 problem+json with Retry-After, like any failure of a dependency;
 * - after it (the status is sent): the response is destroyed, so the client sees a failed
 *   transfer, never a hang or a shorter body that looks whole; the route's close handler
 *   cancels its queries.
 */
export function answerStreamFailures(app: Koa, logger: Logger): void {
  app.context.onerror = function onStreamFailure(this: Context, err: Error | null) {
    if (err == null) return;
    const log = (this.state.log as Logger | undefined) ?? logger;
    if (!this.writable) {
      this.res.destroy(); // the client went away (on-finished reports that here too): no one to tell
      return;
    }
    if (this.headerSent) {
      log.warn({ err }, 'response body failed after its head was sent; connection cut');
      this.res.destroy();
      return;
    }
    log.warn({ err }, 'response body failed before its first byte');
    for (const name of this.res.getHeaderNames()) this.res.removeHeader(name);
    if (this.state.requestId) this.set('X-Request-Id', String(this.state.requestId));
    writeProblem(this, 'unavailable', 'a dependency failed while the answer was being prepared; retry later');
    const body = JSON.stringify(this.body);
    this.length = Buffer.byteLength(body);
    this.res.end(body);
  };
}
