import { formatTimestamp, type AccountsState, type UserRecord } from '@meridian/domain';
import type { Context } from 'koa';
import { z } from 'zod';
import type { FileUsage } from './commands.ts';

/** What GET /users shows of a user; never a key's secret or digest. */
export const metricRuleSchema = z.object({
  match: z.enum(['exact', 'prefix']).describe('exact: the metric name equals value; prefix: it starts with value'),
  value: z.string().min(1).max(256),
  access: z.enum(['r', 'rw']).describe('r: download; rw: download and upload'),
});

export const apiKeyViewSchema = z.object({ key_id: z.string(), created_at: z.string() });

export const userViewSchema = z.object({
  user_name: z.string(),
  created_at: z.string().describe('ISO 8601 with a +hhmm offset, e.g. 2024-01-02T03:04:05+0000'),
  is_admin: z.boolean(),
  disabled: z.boolean(),
  entitlements: z.object({ metrics: z.array(metricRuleSchema) }),
  api_keys: z.array(apiKeyViewSchema).describe('active keys only'),
  files: z
    .object({
      bytes_used: z.number().int().describe("bytes of the user's live files"),
      quota_bytes: z.number().int().describe('bytes the user may keep: their own quota when an admin set one, else MERIDIAN_FILE_QUOTA_BYTES'),
    })
    .optional(),
});

export type UserView = z.infer<typeof userViewSchema>;

export function activeKeys(state: AccountsState, user: UserRecord) {
  return user.key_ids
    .map((id) => state.keys.get(id)!)
    .filter((k) => k.revoked_at === null)
    .map((k) => ({ key_id: k.key_id, created_at: formatTimestamp(k.created_at) }));
}

export function userView(state: AccountsState, user: UserRecord, files?: FileUsage): UserView {
  return {
    user_name: user.user_name,
    created_at: formatTimestamp(user.created_at),
    is_admin: user.is_admin,
    disabled: user.disabled_at !== null,
    entitlements: { metrics: user.entitlements.map((r) => ({ ...r })) },
    api_keys: activeKeys(state, user),
    ...(files ? { files: { bytes_used: files.bytes_used, quota_bytes: files.quota_bytes } } : {}),
  };
}

/** Documents the Cache-Control of an answer that carries a new API key. */
export const newKeyHeaders = {
  'Cache-Control': { description: 'no-store: the answer carries a secret no cache may keep', schema: z.literal('no-store') },
};

/** Answers 201 with a body that carries a new API key: no cache (browser, proxy) may keep it. */
export function answerWithNewKey(ctx: Context, body: Record<string, unknown>): void {
  ctx.status = 201;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}
