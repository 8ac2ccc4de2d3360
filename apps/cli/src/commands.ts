import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  composeApiKey,
  confirmUserCreated,
  decideCreateUser,
  decideReplaceEntitlements,
  decideRevokeKey,
  decideSetFileQuota,
  formatTimestamp,
  parseMetricRules,
  type MetricRule,
} from '@meridian/domain';
import { AccountsStore } from '@meridian/folds';
import type { CliServices } from './cli-services.ts';
import { replayUsage, ReplayUsageError, runEventsExport, runReplay } from './replay/commands.ts';

export const usage = `usage:
  meridian users add <name> [--admin] [--json]   create a user and print its first API key
  meridian users list [--json]                   list users
  meridian keys revoke <key_id>                  revoke an API key (any user's)
  meridian grant <user> (--prefix <p> | --exact <name>) --access r|rw
                                                 add or change one metric access rule
  meridian quota <user> <bytes|default>          set how many bytes of files a user may keep,
                                                 or go back to MERIDIAN_FILE_QUOTA_BYTES
${replayUsage}`;

export class UsageError extends Error {}

const ACTOR = 'cli';

/** Commands that are one word: everything after the word is their arguments. */
const SINGLE_WORD = new Set(['grant', 'quota']);

/** Runs one CLI command against the event log and returns what to print. */
export async function runCommand(services: CliServices, argv: readonly string[]): Promise<string> {
  const [group, verb, ...rest] = argv;
  const single = SINGLE_WORD.has(group ?? '');
  const command = single ? group! : `${group ?? ''} ${verb ?? ''}`.trim();
  const args = single ? [verb ?? '', ...rest].filter(Boolean) : rest;
  switch (command) {
    case 'users add':
      return withAccounts(services, (s) => usersAdd(s, args));
    case 'users list':
      return withAccounts(services, (s) => usersList(s, args));
    case 'keys revoke':
      return withAccounts(services, (s) => keysRevoke(s, args));
    case 'grant':
      return withAccounts(services, (s) => grant(s, args));
    case 'quota':
      return withAccounts(services, (s) => quota(s, args));
    case 'events export':
      return usage_(() => runEventsExport(services, args));
    default:
      if (group === 'replay' && verb) return usage_(() => runReplay(services, verb, args));
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  }
}

/** Replay's usage errors are the CLI's usage errors. */
async function usage_(run: () => Promise<string>): Promise<string> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ReplayUsageError) throw new UsageError(error.message);
    throw error;
  }
}

type Session = { store: AccountsStore; execute: (key: string, decide: Parameters<AccountsStore['execute']>[1]) => Promise<unknown> };

async function withAccounts(services: CliServices, run: (s: Session) => Promise<string>): Promise<string> {
  await services.prepareTopics();
  const store = new AccountsStore(services.folds, 'cli', { writesSnapshots: false });
  await store.start();
  try {
    const producer = await services.log.writer();
    return await run({ store, execute: (key, decide) => store.execute(key, decide, producer) });
  } finally {
    await store.stop();
  }
}

async function usersAdd(s: Session, args: string[]): Promise<string> {
  const { values, positionals } = parseArgs({ args, options: { admin: { type: 'boolean' }, json: { type: 'boolean' } }, allowPositionals: true });
  const [name] = positionals;
  if (!name || positionals.length > 1) throw new UsageError('users add needs exactly one user name');
  const key = composeApiKey(randomBytes(8), randomBytes(32));
  await s.execute(name, (state) => decideCreateUser(state, { user_name: name, is_admin: values.admin ?? false, key, at: Date.now(), actor: ACTOR }));
  confirmUserCreated(s.store.state, name, key.key_id);
  if (values.json) return JSON.stringify({ user_name: name, api_key: key.api_key, key_id: key.key_id });
  return `created ${values.admin ? 'admin' : 'user'} ${name}\napi key (shown once): ${key.api_key}\nkey id: ${key.key_id}`;
}

async function usersList(s: Session, args: string[]): Promise<string> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean' } } });
  const users = [...s.store.state.users.values()].sort((a, b) => a.user_name.localeCompare(b.user_name));
  const rows = users.map((u) => ({
    user_name: u.user_name,
    is_admin: u.is_admin,
    disabled: u.disabled_at !== null,
    created_at: formatTimestamp(u.created_at),
    active_keys: u.key_ids.filter((id) => s.store.state.keys.get(id)?.revoked_at === null),
    metrics: u.entitlements,
  }));
  if (values.json) return JSON.stringify(rows);
  if (rows.length === 0) return 'no users';
  return rows
    .map(
      (r) =>
        `${r.user_name}${r.is_admin ? ' (admin)' : ''}${r.disabled ? ' [disabled]' : ''}  keys: ${r.active_keys.join(', ') || '-'}  metrics: ${r.metrics.map((m) => `${m.match}:${m.value}=${m.access}`).join(', ') || '-'}`,
    )
    .join('\n');
}

async function keysRevoke(s: Session, args: string[]): Promise<string> {
  const [keyId] = args;
  if (!keyId || args.length > 1) throw new UsageError('keys revoke needs exactly one key id');
  const owner = s.store.state.keys.get(keyId)?.user_name;
  if (!owner) throw new Error(`no key ${keyId}`);
  await s.execute(owner, (state) => decideRevokeKey(state, { user_name: owner, key_id: keyId, at: Date.now(), actor: ACTOR }));
  return `revoked key ${keyId} of ${owner}`;
}

async function grant(s: Session, args: string[]): Promise<string> {
  const { values, positionals } = parseArgs({
    args,
    options: { prefix: { type: 'string' }, exact: { type: 'string' }, access: { type: 'string' } },
    allowPositionals: true,
  });
  const [userName] = positionals;
  if (!userName) throw new UsageError('grant needs a user name');
  if ((values.prefix === undefined) === (values.exact === undefined)) throw new UsageError('grant needs exactly one of --prefix or --exact');
  if (values.access !== 'r' && values.access !== 'rw') throw new UsageError('--access must be r or rw');
  const rule: MetricRule =
    values.prefix !== undefined
      ? { match: 'prefix', value: values.prefix, access: values.access }
      : { match: 'exact', value: values.exact!, access: values.access };
  // The rule set is read and replaced inside the command, so it is the log's latest, and
  // validated as the api validates it (an empty prefix would match every metric).
  await s.execute(userName, (state) => {
    const current = state.users.get(userName)?.entitlements ?? [];
    const rules = parseMetricRules([...current.filter((r) => !(r.match === rule.match && r.value === rule.value)), rule]);
    return decideReplaceEntitlements(state, { user_name: userName, rules, at: Date.now(), actor: ACTOR });
  });
  return `granted ${rule.access} on ${rule.match} ${JSON.stringify(rule.value)} to ${userName}`;
}

async function quota(s: Session, args: string[]): Promise<string> {
  const [userName, amount] = args;
  if (!userName || amount === undefined || args.length > 2) throw new UsageError('quota needs a user name and a number of bytes, or default');
  if (amount !== 'default' && !/^\d{1,16}$/.test(amount)) throw new UsageError('the quota must be a whole number of bytes, or default');
  const bytes = amount === 'default' ? null : Number(amount);
  await s.execute(userName, (state) => decideSetFileQuota(state, { user_name: userName, quota_bytes: bytes, at: Date.now(), actor: ACTOR }));
  return bytes === null ? `${userName} has the default file quota (MERIDIAN_FILE_QUOTA_BYTES)` : `${userName} may keep ${bytes} bytes of files`;
}
