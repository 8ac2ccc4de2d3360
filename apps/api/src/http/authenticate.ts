import type { Context } from 'koa';
import { authenticate, DomainError, type AccountsState, type UserRecord } from '@meridian/domain';

/** Longest Authorization header worth looking at; a real key is 64 characters. */
const MAX_AUTHORIZATION_LENGTH = 512;

/**
 * Bearer authentication. Missing, malformed, unknown, revoked keys and disabled users all get
 * the same 401: the answer never says which it was. The key itself is never logged.
 */
export function bearerAuthenticator(state: () => AccountsState, ready: () => boolean) {
  return (ctx: Context): UserRecord => {
    if (!ready()) throw new DomainError('unavailable', 'the api is catching up with the accounts log; retry shortly');
    const header = ctx.get('Authorization');
    const match = header.length <= MAX_AUTHORIZATION_LENGTH ? /^Bearer +(\S+) *$/i.exec(header) : null;
    const user = match ? authenticate(state(), match[1]!) : null;
    if (!user) throw new DomainError('unauthenticated', 'a valid API key is required: Authorization: Bearer <API_KEY>');
    ctx.state.user = user.user_name;
    return user;
  };
}
