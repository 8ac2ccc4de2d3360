import type { Context } from 'koa';

/**
 * Runs `wait`, a request waiting on purpose for up to `ms` (a long-poll), without the server's
 * own bounds cutting it: the request timeout (MERIDIAN_REQUEST_TIMEOUT_MS, see requestTimeout)
 * and the connection's idle timeout (MERIDIAN_HTTP_IDLE_TIMEOUT_MS, nothing is sent while it
 * waits) are both moved on by `ms`. `wait` gets a signal that aborts when the client goes away,
 * so whatever it holds is given back at once, not when its time runs out.
 */
export async function holdOpen<T>(ctx: Context, ms: number, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
  (ctx.state.extendTimeout as ((extraMs: number) => void) | undefined)?.(ms);
  const socket = ctx.req.socket;
  const idle = socket.timeout;
  if (idle) socket.setTimeout(idle + ms);
  const gone = new AbortController();
  const onClose = () => gone.abort(new Error('the client went away'));
  // A response's 'close' before it is sent: the connection is gone.
  ctx.res.once('close', onClose);
  const timedOut = ctx.state.signal as AbortSignal | undefined;
  try {
    return await wait(timedOut ? AbortSignal.any([gone.signal, timedOut]) : gone.signal);
  } finally {
    ctx.res.off('close', onClose);
    if (idle && !socket.destroyed) socket.setTimeout(idle);
  }
}
