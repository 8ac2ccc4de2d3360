import { z } from 'zod';
import type { StateCodec } from '../snapshots/state-codec.ts';
import type { AccountsState, KeyRecord, UserRecord } from './state.ts';

const time = z.number().int();
const access = z.enum(['r', 'rw']);
const v1 = z.object({
  users: z.array(z.object({
    user_name: z.string(),
    is_admin: z.boolean(),
    created_at: time,
    disabled_at: time.nullable(),
    key_ids: z.array(z.string()),
    entitlements: z.array(z.object({ match: z.enum(['exact', 'prefix']), value: z.string(), access })),
    file_quota_bytes: z.number().int().nonnegative().nullable(),
  })),
  keys: z.array(z.object({
    key_id: z.string(),
    user_name: z.string(),
    secret_sha256: z.string().regex(/^[0-9a-f]{64}$/),
    created_at: time,
    revoked_at: time.nullable(),
  })),
});

/**
 * Account state as a snapshot (version 1): users and keys as arrays in the maps' own order, so
 * the state read back iterates as the fold it came from; key digests as hex. Fields are written
 * one by one, in a fixed order, so equal states give equal bytes.
 */
export const accountsCodec: StateCodec<AccountsState> = {
  kind: 'accounts',
  version: 1,
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
    };
  },
  fromJSON(json) {
    const parsed = v1.parse(json);
    const users = new Map<string, UserRecord>(parsed.users.map((u) => [u.user_name, u]));
    const keys = new Map<string, KeyRecord>(parsed.keys.map((k) => [k.key_id, { ...k, secret_sha256: Buffer.from(k.secret_sha256, 'hex') }]));
    for (const user of users.values()) {
      for (const id of user.key_ids) if (keys.get(id)?.user_name !== user.user_name) throw new Error(`key ${id} of ${user.user_name} is missing`);
    }
    return { users, keys };
  },
};
