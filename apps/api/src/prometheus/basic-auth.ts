import type { Context, Next } from 'koa';
import { PROMETHEUS_PREFIX } from './routes.ts';

/** Longest Authorization header worth decoding, as the bearer check bounds it. */
const MAX_AUTHORIZATION_LENGTH = 512;

/**
 * Basic authentication on the Prometheus API only, the API key as the password (the user name
 * is ignored): promtool 2.42 and some Prometheus clients can send only the credentials of the
 * URL (http://meridian:KEY@host/prometheus), never a bearer header. The request then goes on
 * as if it had sent `Authorization: Bearer KEY`, through the same check; everything else of
 * the api takes bearer keys only.
 */
export async function prometheusBasicAuth(ctx: Context, next: Next): Promise<void> {
  if (ctx.path.startsWith(`${PROMETHEUS_PREFIX}/`)) {
    const header = ctx.get('Authorization');
    const m = header.length <= MAX_AUTHORIZATION_LENGTH ? /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header) : null;
    if (m) {
      const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) ctx.request.headers.authorization = `Bearer ${decoded.slice(colon + 1)}`;
    }
  }
  await next();
}
