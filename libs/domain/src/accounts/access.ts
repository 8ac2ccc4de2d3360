import type { Access } from './events.ts';
import { digestApiKey, digestsEqual, keyIdOf } from './keys.ts';
import type { AccountsState, UserRecord } from './state.ts';

/**
 * The user a presented API key belongs to, or null for every kind of failure alike
 * (malformed, unknown, revoked, disabled user): callers must not tell them apart.
 */
export function authenticate(state: AccountsState, apiKey: string): UserRecord | null {
  const keyId = keyIdOf(apiKey);
  const key = keyId === null ? undefined : state.keys.get(keyId);
  // Hash even when there is no record, so timing does not reveal whether the key id exists.
  const presented = digestApiKey(apiKey);
  if (!key || !digestsEqual(presented, key.secret_sha256) || key.revoked_at !== null) return null;
  const user = state.users.get(key.user_name);
  return user && user.disabled_at === null ? user : null;
}

const rank: Record<Access, number> = { r: 1, rw: 2 };

/** The caller's access to a metric: admins have rw on everything; otherwise the best matching rule. */
export function metricAccess(user: UserRecord, metricName: string): Access | null {
  if (user.is_admin) return 'rw';
  let best: Access | null = null;
  for (const rule of user.entitlements) {
    const matches = rule.match === 'exact' ? metricName === rule.value : metricName.startsWith(rule.value);
    if (matches && (best === null || rank[rule.access] > rank[best])) best = rule.access;
  }
  return best;
}

export function canRead(user: UserRecord, metricName: string): boolean {
  return metricAccess(user, metricName) !== null;
}

export function canWrite(user: UserRecord, metricName: string): boolean {
  return metricAccess(user, metricName) === 'rw';
}

/**
 * Whether the caller may write some metric: admins, and users with at least one rw rule.
 * One who may write none is refused an upload before any of its bytes are read.
 */
export function canWriteSomeMetric(user: UserRecord): boolean {
  return user.is_admin || user.entitlements.some((rule) => rule.access === 'rw');
}

/** Bytes of files a user may keep: their own quota when an admin set one, else the default. */
export function fileQuotaOf(user: UserRecord | undefined, defaultBytes: number): number {
  return user?.file_quota_bytes ?? defaultBytes;
}
