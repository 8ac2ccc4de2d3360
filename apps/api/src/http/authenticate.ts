import type { Context } from 'koa';
import { authenticate, DomainError, type AccountsState, type UserRecord } from '@meridian/domain';

/** Longest Authorization header worth looking at; a real key is 64 characters. */
const MAX_AUTHORIZATION_LENGTH = 512;

/**
 * The API key an Authorization header carries: `Bearer <key>`; `Token <key>`, as Influx clients
 * send it; or Basic with the key as the password, as agents configured with a user and a
 * password send it (Prometheus' basic_auth, Telegraf's InfluxDB v1 output). Null for anything else.
 */
export function presentedKey(header: string): string | null {
  if (header.length > MAX_AUTHORIZATION_LENGTH) return null;
  const token = /^(?:Bearer|Token) +(\S+) *$/i.exec(header);
  if (token) return token[1]!;
  const basic = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 || colon === decoded.length - 1 ? null : decoded.slice(colon + 1);
}

/**
 * Authentication by API key (presentedKey). Missing, malformed, unknown, revoked keys and
 * disabled users all get the same 401: the answer never says which it was. The key itself is
 * never logged.
 */
export function bearerAuthenticator(state: () => AccountsState, ready: () => boolean) {
  return (ctx: Context): UserRecord => {
    if (!ready()) throw new DomainError('unavailable', 'the api is catching up with the accounts log; retry shortly');
    const key = presentedKey(ctx.get('Authorization'));
    const user = key === null ? null : authenticate(state(), key);
    if (!user) throw new DomainError('unauthenticated', 'a valid API key is required: Authorization: Bearer <API_KEY>');
    ctx.state.user = user.user_name;
    return user;
  };
}
