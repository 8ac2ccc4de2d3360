import { conflict, DomainError, notFound, validationError, type FieldError } from '../errors.ts';
import type { Access, AccountEvent, ApiKeyIssued, MetricMatch } from './events.ts';
import { userNameProblem } from './names.ts';
import type { AccountsState, MetricRule, UserRecord } from './state.ts';

/**
 * Account commands: each takes the current state and a command (with its time and actor,
 * and any generated key material) and returns the events to append, or throws a DomainError.
 */
type Meta = { readonly at: number; readonly actor: string };
type NewKey = { readonly key_id: string; readonly secret_sha256: Buffer };

export const MAX_RULES = 1000;
export const MAX_RULE_VALUE_LENGTH = 256;
/** 1 PB: beyond any disk, and inside the Avro longs avsc writes from a JS number (it refuses 2^53 - 1). */
export const MAX_FILE_QUOTA_BYTES = 1e15;

function activeUser(state: AccountsState, userName: string): UserRecord {
  const user = state.users.get(userName);
  if (!user || user.disabled_at !== null) throw notFound(`no user ${JSON.stringify(userName)}`);
  return user;
}

function issued(userName: string, key: NewKey, meta: Meta): ApiKeyIssued {
  return { type: 'ApiKeyIssued', user_name: userName, key_id: key.key_id, secret_sha256: key.secret_sha256, ...meta };
}

export function decideCreateUser(state: AccountsState, cmd: Meta & { user_name: unknown; is_admin: boolean; key: NewKey }): AccountEvent[] {
  const problem = userNameProblem(cmd.user_name);
  if (problem) throw validationError(`invalid user_name: ${problem}`, [{ field: 'user_name', reason: problem }]);
  const user_name = cmd.user_name as string;
  if (state.users.has(user_name)) throw conflict(`user ${JSON.stringify(user_name)} already exists`);
  return [
    { type: 'UserCreated', user_name, is_admin: cmd.is_admin, key_id: cmd.key.key_id, secret_sha256: cmd.key.secret_sha256, at: cmd.at, actor: cmd.actor },
  ];
}

/**
 * After a UserCreated was appended and folded: did it create the user? Another process may
 * have appended the same name first; the fold keeps that one and ignores ours (a conflict).
 */
export function confirmUserCreated(state: AccountsState, user_name: string, key_id: string): void {
  if (state.keys.get(key_id)?.user_name !== user_name) throw conflict(`user ${JSON.stringify(user_name)} already exists`);
}

/**
 * Issues one more key, unless the user already holds `max_keys` keys that are not revoked
 * (409 /problems/limit-reached: waiting does not help, revoking a key does). The limit is
 * the caller's setting (MERIDIAN_MAX_API_KEYS_PER_USER); every instance decides on the log
 * read to its end, so all agree.
 */
export function decideIssueKey(state: AccountsState, cmd: Meta & { user_name: string; key: NewKey; max_keys: number }): AccountEvent[] {
  const user = activeUser(state, cmd.user_name);
  const held = user.key_ids.filter((id) => state.keys.get(id)?.revoked_at === null).length;
  if (held >= cmd.max_keys) {
    throw new DomainError('limit_reached', `at most ${cmd.max_keys} API keys per user (MERIDIAN_MAX_API_KEYS_PER_USER); revoke one first`, [
      { field: 'MERIDIAN_MAX_API_KEYS_PER_USER', reason: `${held} of ${cmd.max_keys} keys held` },
    ]);
  }
  return [issued(cmd.user_name, cmd.key, { at: cmd.at, actor: cmd.actor })];
}

/** Revokes one of the user's own keys. A key of someone else is "not found", like a missing one. */
export function decideRevokeKey(state: AccountsState, cmd: Meta & { user_name: string; key_id: string }): AccountEvent[] {
  const key = state.keys.get(cmd.key_id);
  if (!key || key.user_name !== cmd.user_name || key.revoked_at !== null) throw notFound(`no active key ${JSON.stringify(cmd.key_id)}`);
  return [{ type: 'ApiKeyRevoked', user_name: cmd.user_name, key_id: cmd.key_id, at: cmd.at, actor: cmd.actor }];
}

export function decideDisableUser(state: AccountsState, cmd: Meta & { user_name: string }): AccountEvent[] {
  activeUser(state, cmd.user_name);
  return [{ type: 'UserDisabled', user_name: cmd.user_name, at: cmd.at, actor: cmd.actor }];
}

/**
 * Sets how many bytes of files a user may keep, or (null) sends it back to the default.
 * Setting the quota it already has appends nothing. Lowering it below the user's usage keeps
 * their files: only new definitions are refused.
 */
export function decideSetFileQuota(state: AccountsState, cmd: Meta & { user_name: string; quota_bytes: number | null }): AccountEvent[] {
  const user = activeUser(state, cmd.user_name);
  const q = cmd.quota_bytes;
  if (q !== null && !(Number.isInteger(q) && q >= 0 && q <= MAX_FILE_QUOTA_BYTES)) {
    throw validationError(`quota_bytes must be a whole number of bytes from 0 to ${MAX_FILE_QUOTA_BYTES}, or null for the default`, [
      { field: 'quota_bytes', reason: `not an integer from 0 to ${MAX_FILE_QUOTA_BYTES} or null` },
    ]);
  }
  if (user.file_quota_bytes === q) return [];
  return [{ type: 'FileQuotaSet', user_name: user.user_name, quota_bytes: q, at: cmd.at, actor: cmd.actor }];
}

/** Validates a rule list as given by a client; returns the rules or throws with every problem. */
export function parseMetricRules(input: unknown): MetricRule[] {
  if (!Array.isArray(input)) throw validationError('metrics must be an array of rules', [{ field: 'metrics', reason: 'must be an array' }]);
  if (input.length > MAX_RULES) throw validationError(`at most ${MAX_RULES} rules`, [{ field: 'metrics', reason: `more than ${MAX_RULES} rules` }]);
  const errors: FieldError[] = [];
  const rules: MetricRule[] = [];
  const seen = new Set<string>();
  input.forEach((raw: unknown, i) => {
    const r = (raw ?? {}) as Record<string, unknown>;
    const at = `metrics[${i}]`;
    if (r.match !== 'exact' && r.match !== 'prefix') errors.push({ field: `${at}.match`, reason: 'must be "exact" or "prefix"' });
    if (typeof r.value !== 'string' || r.value.length === 0 || r.value.length > MAX_RULE_VALUE_LENGTH) {
      errors.push({ field: `${at}.value`, reason: `must be a string of 1 to ${MAX_RULE_VALUE_LENGTH} characters` });
    }
    if (r.access !== 'r' && r.access !== 'rw') errors.push({ field: `${at}.access`, reason: 'must be "r" or "rw"' });
    const id = `${String(r.match)}\u0000${String(r.value)}`;
    if (seen.has(id)) errors.push({ field: at, reason: 'duplicate rule for the same match and value' });
    seen.add(id);
    rules.push({ match: r.match as MetricMatch, value: r.value as string, access: r.access as Access });
  });
  if (errors.length > 0) throw validationError('invalid metric rules', errors);
  return rules;
}

/** Replaces a user's metric rules: revokes the ones that go, grants the new and changed ones. */
export function decideReplaceEntitlements(state: AccountsState, cmd: Meta & { user_name: string; rules: readonly MetricRule[] }): AccountEvent[] {
  const user = activeUser(state, cmd.user_name);
  const meta = { at: cmd.at, actor: cmd.actor };
  const same = (a: MetricRule, b: MetricRule) => a.match === b.match && a.value === b.value;
  const events: AccountEvent[] = [];
  for (const old of user.entitlements) {
    if (!cmd.rules.some((r) => same(r, old))) {
      events.push({ type: 'MetricEntitlementRevoked', user_name: user.user_name, match: old.match, value: old.value, ...meta });
    }
  }
  for (const rule of cmd.rules) {
    const old = user.entitlements.find((r) => same(r, rule));
    if (!old || old.access !== rule.access) {
      events.push({ type: 'MetricEntitlementGranted', user_name: user.user_name, ...rule, ...meta });
    }
  }
  return events;
}
