import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  composeApiKey,
  confirmUserCreated,
  decideCreateUser,
  decideDisableUser,
  decideReplaceEntitlements,
  decideSetFileQuota,
  formatTimestamp,
  MAX_FILE_QUOTA_BYTES,
  parseMetricRules,
} from '@meridian/domain';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { answerWithNewKey, metricRuleSchema, newKeyHeaders, userView, userViewSchema } from './views.ts';
import type { AccountsCommands } from './commands.ts';

const userNameParam = z.object({ user_name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 letters, digits, ".", "_" or "-"') });

export function userRoutes(accounts: AccountsCommands): RouteDef[] {
  return [listUsersRoute(accounts), createUserRoute(accounts), replaceEntitlementsRoute(accounts), setFileQuotaRoute(accounts), disableUserRoute(accounts)];
}

/** The caller, or every user for an admin. */
function listUsersRoute(accounts: AccountsCommands): RouteDef {
  return defineRoute({
    method: 'GET',
    path: '/api/v1/users',
    operationId: 'listUsers',
    summary: 'The caller, or every user for an admin',
    description: "The seed's authentication example. A normal user sees exactly itself; an admin sees every user, disabled ones included.",
    tags: ['users'],
    auth: 'user',
    responses: { 200: { description: 'Users', schema: z.object({ users: z.array(userViewSchema) }) } },
    handler: async (ctx, { user }) => {
      const state = accounts.state;
      const users = user.is_admin ? [...state.users.values()].sort((a, b) => a.user_name.localeCompare(b.user_name)) : [user];
      const usage = await accounts.fileUsage?.(users.map((u) => u.user_name));
      ctx.body = { users: users.map((u) => userView(state, u, usage?.get(u.user_name))) };
    },
  });
}

/** Create a user and its first API key (admin). */
function createUserRoute(accounts: AccountsCommands): RouteDef {
  return defineRoute({
    method: 'POST',
    path: '/api/v1/users',
    operationId: 'createUser',
    summary: 'Create a user and its first API key (admin)',
    tags: ['users'],
    auth: 'admin',
    body: z.object({ user_name: z.string(), is_admin: z.boolean().default(false) }),
    responses: {
      201: {
        description: 'Created; the API key is shown this once and never again',
        schema: z.object({ user_name: z.string(), key_id: z.string(), api_key: z.string(), created_at: z.string() }),
        headers: newKeyHeaders,
      },
    },
    problems: ['conflict'],
    handler: async (ctx, { body, user }) => {
      const key = composeApiKey(randomBytes(8), randomBytes(32));
      const at = Date.now();
      await accounts.execute(body.user_name, (s) =>
        decideCreateUser(s, { user_name: body.user_name, is_admin: body.is_admin, key, at, actor: user.user_name }),
      );
      confirmUserCreated(accounts.state, body.user_name, key.key_id);
      answerWithNewKey(ctx, { user_name: body.user_name, key_id: key.key_id, api_key: key.api_key, created_at: formatTimestamp(at) });
    },
  });
}

/** Replace a user's metric access rules (admin). */
function replaceEntitlementsRoute(accounts: AccountsCommands): RouteDef {
  return defineRoute({
    method: 'PUT',
    path: '/api/v1/users/{user_name}/entitlements',
    operationId: 'replaceEntitlements',
    summary: "Replace a user's metric access rules (admin)",
    tags: ['users'],
    auth: 'admin',
    params: userNameParam,
    body: z.object({ metrics: z.array(metricRuleSchema).max(1000) }),
    responses: { 200: { description: 'The user after the change', schema: userViewSchema } },
    problems: ['not_found'],
    handler: async (ctx, { params, body, user }) => {
      const rules = parseMetricRules(body.metrics);
      await accounts.execute(params.user_name, (s) =>
        decideReplaceEntitlements(s, { user_name: params.user_name, rules, at: Date.now(), actor: user.user_name }),
      );
      ctx.body = userView(accounts.state, accounts.state.users.get(params.user_name)!, (await accounts.fileUsage?.([params.user_name]))?.get(params.user_name));
    },
  });
}

/** Set how many bytes of files a user may keep (admin). */
function setFileQuotaRoute(accounts: AccountsCommands): RouteDef {
  return defineRoute({
    method: 'PUT',
    path: '/api/v1/users/{user_name}/file_quota',
    operationId: 'setFileQuota',
    summary: 'Set how many bytes of files a user may keep (admin)',
    description:
      "The user's own quota replaces the default (MERIDIAN_FILE_QUOTA_BYTES) for them alone; null goes back to the default. A quota below what the user keeps already deletes nothing: their new definitions get 413 until they are under it.",
    tags: ['users'],
    auth: 'admin',
    params: userNameParam,
    body: z.object({
      quota_bytes: z.number().int().min(0).max(MAX_FILE_QUOTA_BYTES).nullable().describe('bytes (1,000,000 bytes = 1 MB); null: the default'),
    }),
    responses: { 200: { description: 'The user after the change; files.quota_bytes is the quota that now applies', schema: userViewSchema } },
    problems: ['not_found'],
    handler: async (ctx, { params, body, user }) => {
      await accounts.execute(params.user_name, (s) =>
        decideSetFileQuota(s, { user_name: params.user_name, quota_bytes: body.quota_bytes, at: Date.now(), actor: user.user_name }),
      );
      ctx.body = userView(accounts.state, accounts.state.users.get(params.user_name)!, (await accounts.fileUsage?.([params.user_name]))?.get(params.user_name));
    },
  });
}

/** Disable a user: its keys stop working at once (admin). */
function disableUserRoute(accounts: AccountsCommands): RouteDef {
  return defineRoute({
    method: 'DELETE',
    path: '/api/v1/users/{user_name}',
    operationId: 'disableUser',
    summary: 'Disable a user: its keys stop working at once (admin)',
    tags: ['users'],
    auth: 'admin',
    params: userNameParam,
    responses: { 204: { description: 'Disabled' } },
    problems: ['not_found'],
    handler: async (ctx, { params, user }) => {
      await accounts.execute(params.user_name, (s) => decideDisableUser(s, { user_name: params.user_name, at: Date.now(), actor: user.user_name }));
      ctx.status = 204;
    },
  });
}
