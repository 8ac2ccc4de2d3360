import { z } from 'zod';
import type { StateCodec } from '../snapshots/state-codec.ts';
import type { AccountsState, KeyRecord, UserRecord } from './state.ts';
import { retentionKey, type RetentionRules } from '../retention/rules.ts';

const time = z.number().int();
const access = z.enum(['r', 'rw']);
const user = z.object({
  user_name: z.string(),
  is_admin: z.boolean(),
  created_at: time,
  disabled_at: time.nullable(),
  key_ids: z.array(z.string()),
  entitlements: z.array(z.object({ match: z.enum(['exact', 'prefix']), value: z.string(), access })),
  file_quota_bytes: z.number().int().nonnegative().nullable(),
});
const retentionRule = z.object({
  match: z.enum(['exact', 'prefix']),
  value: z.string(),
  keep_ms: z.number().int().positive(),
  set_at: time,
  actor: z.string(),
});
const key = z.object({
  key_id: z.string(),
  user_name: z.string(),
  secret_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  created_at: time,
  revoked_at: time.nullable(),
});

/**
 * Each element of a parsed array checked (zod returns a copy) and let go of at once, in the
 * parsed document itself: a start then holds the document and the state being built, never a
 * second copy of the whole document.
 */
function eachChecked<T>(items: unknown[], schema: z.ZodType<T>, take: (item: T) => void): void {
  for (let i = 0; i < items.length; i += 1) {
    take(schema.parse(items[i]));
    items[i] = undefined;
  }
}

/**
 * Account state as a snapshot (version 2: with the retention rules): users, keys and rules as arrays in the maps' own order, so
 * the state read back iterates as the fold it came from; key digests as hex. Fields are written
 * one by one, in a fixed order, so equal states give equal bytes.
 */
export const accountsCodec: StateCodec<AccountsState> = {
  kind: 'accounts',
  version: 2,
  toJSON(state) {
    return {
      users: [...state.users.values()].map((u) => ({
        user_name: u.user_name,
        is_admin: u.is_admin,
        created_at: u.created_at,
        disabled_at: u.disabled_at,
        key_ids: u.key_ids,
        entitlements: u.entitlements.map((r) => ({ match: r.match, value: r.value, access: r.access })),
        file_quota_bytes: u.file_quota_bytes,
      })),
      keys: [...state.keys.values()].map((k) => ({
        key_id: k.key_id,
        user_name: k.user_name,
        secret_sha256: k.secret_sha256.toString('hex'),
        created_at: k.created_at,
        revoked_at: k.revoked_at,
      })),
      retention: [...state.retention.values()].map((r) => ({ match: r.match, value: r.value, keep_ms: r.keep_ms, set_at: r.set_at, actor: r.actor })),
    };
  },
  fromJSON(json) {
    const document = json as { users?: unknown; keys?: unknown; retention?: unknown } | null;
    if (typeof document !== 'object' || document === null || !Array.isArray(document.users) || !Array.isArray(document.keys)) {
      throw new Error('an accounts snapshot without users and keys');
    }
    // Consumes the document: each element is checked, taken and dropped from it.
    const users = new Map<string, UserRecord>();
    eachChecked(document.users, user, (u) => users.set(u.user_name, u));
    const keys = new Map<string, KeyRecord>();
    eachChecked(document.keys, key, (k) => keys.set(k.key_id, { ...k, secret_sha256: Buffer.from(k.secret_sha256, 'hex') }));
    for (const user of users.values()) {
      for (const id of user.key_ids) if (keys.get(id)?.user_name !== user.user_name) throw new Error(`key ${id} of ${user.user_name} is missing`);
    }
    const retention: RetentionRules = new Map();
    if (!Array.isArray(document.retention)) throw new Error('an accounts snapshot without retention rules');
    eachChecked(document.retention, retentionRule, (r) => retention.set(retentionKey(r.match, r.value), r));
    return { users, keys, retention };
  },
};
