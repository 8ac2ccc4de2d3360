import { applyRetentionEvent, type RetentionRules } from '../retention/rules.ts';
import type { Access, AccountEvent, MetricMatch } from './events.ts';

export type MetricRule = { readonly match: MetricMatch; readonly value: string; readonly access: Access };

export type KeyRecord = {
  readonly key_id: string;
  readonly user_name: string;
  readonly secret_sha256: Buffer;
  readonly created_at: number;
  revoked_at: number | null;
};

export type UserRecord = {
  readonly user_name: string;
  readonly is_admin: boolean;
  readonly created_at: number;
  disabled_at: number | null;
  /** Key ids in issue order. */
  readonly key_ids: string[];
  /** Metric rules in grant order; one rule per (match, value). */
  entitlements: MetricRule[];
  /** Bytes of files the user may keep; null: the default (MERIDIAN_FILE_QUOTA_BYTES). */
  file_quota_bytes: number | null;
};

export type AccountsState = {
  readonly users: Map<string, UserRecord>;
  readonly keys: Map<string, KeyRecord>;
  /** Retention rules (admin configuration, on the accounts topic beside the entitlements). */
  readonly retention: RetentionRules;
};

export function initialAccounts(): AccountsState {
  return { users: new Map(), keys: new Map(), retention: new Map() };
}

/**
 * The fold: applies one event to the state. Deterministic and free of I/O, so replaying
 * the accounts topic always rebuilds the same state. It updates in place (the state can
 * hold many users and keys); `foldAccounts` gives the pure whole-log view. Events that do
 * not fit the state (a key for an unknown user, a second creation of a name) are ignored:
 * the first writer wins, on every replay alike.
 */
export function applyAccountEvent(state: AccountsState, event: AccountEvent): AccountsState {
  switch (event.type) {
    case 'UserCreated':
      if (!state.users.has(event.user_name) && !state.keys.has(event.key_id)) {
        state.users.set(event.user_name, {
          user_name: event.user_name,
          is_admin: event.is_admin,
          created_at: event.at,
          disabled_at: null,
          key_ids: [],
          entitlements: [],
          file_quota_bytes: null,
        });
        addKey(state, event.user_name, event.key_id, event.secret_sha256, event.at);
      }
      return state;
    case 'UserDisabled': {
      const user = state.users.get(event.user_name);
      if (user && user.disabled_at === null) user.disabled_at = event.at;
      return state;
    }
    case 'ApiKeyIssued': {
      if (state.users.has(event.user_name)) addKey(state, event.user_name, event.key_id, event.secret_sha256, event.at);
      return state;
    }
    case 'ApiKeyRevoked': {
      const key = state.keys.get(event.key_id);
      if (key && key.user_name === event.user_name && key.revoked_at === null) key.revoked_at = event.at;
      return state;
    }
    case 'MetricEntitlementGranted': {
      const user = state.users.get(event.user_name);
      if (user) {
        const rule: MetricRule = { match: event.match, value: event.value, access: event.access };
        const at = user.entitlements.findIndex((r) => r.match === rule.match && r.value === rule.value);
        if (at >= 0) user.entitlements[at] = rule;
        else user.entitlements.push(rule);
      }
      return state;
    }
    case 'MetricEntitlementRevoked': {
      const user = state.users.get(event.user_name);
      if (user) user.entitlements = user.entitlements.filter((r) => !(r.match === event.match && r.value === event.value));
      return state;
    }
    case 'FileQuotaSet': {
      const user = state.users.get(event.user_name);
      if (user) user.file_quota_bytes = event.quota_bytes;
      return state;
    }
    case 'RetentionRuleSet':
    case 'RetentionRuleRemoved':
      applyRetentionEvent(state.retention, event);
      return state;
    default: {
      const never: never = event;
      return never;
    }
  }
}

function addKey(state: AccountsState, userName: string, keyId: string, digest: Buffer, at: number): void {
  if (state.keys.has(keyId)) return;
  state.keys.set(keyId, { key_id: keyId, user_name: userName, secret_sha256: Buffer.from(digest), created_at: at, revoked_at: null });
  state.users.get(userName)!.key_ids.push(keyId);
}

export function foldAccounts(events: Iterable<AccountEvent>): AccountsState {
  let state = initialAccounts();
  for (const e of events) state = applyAccountEvent(state, e);
  return state;
}
