import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { userCli } from '../support/cli.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Retention per pattern against the real stack: an admin's rule of seconds, applied by the ingest
 * worker every 500 ms as deletions in the log; old points leave, new ones stay, the catalog follows.
 */
const settings = isolatedSettings({ MERIDIAN_POINTS_RETENTION_INTERVAL_MS: '500', MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;
let user: string;
/** Retention passes that read the catalog (each pass with a rule does, once): counted, not changed. */
let catalogReads = 0;

/**
 * Waits until `passes` whole retention passes have run since it was called: passes run one after
 * the other, so once the catalog is read passes + 1 times, the first `passes` of them have ended.
 */
async function laterPasses(passes: number): Promise<void> {
  const from = catalogReads;
  await waitFor(`${passes} retention passes`, () => (catalogReads > from + passes ? true : undefined), 60_000, 50);
}

async function upload(metric: string, timestamps: readonly number[]): Promise<void> {
  const res = await call(`${api.url}/api/v1/metrics/upload`, admin, {
    method: 'POST',
    body: { metric_name: metric, values: timestamps.map((ts, i) => ({ timestamp: formatTimestamp(ts), value: i })) },
  });
  expect(res.status, res.text).toBe(202);
  expect((await waitForTask(api.url, admin, res.json.task_id, 120_000)).status).toBe('succeeded');
}
const timestamps = async (metric: string) => {
  const res = await call(`${api.url}/api/v1/metrics/download?${new URLSearchParams({ metrics: metric, file_format: 'json', max_rows: '1000' })}`, admin);
  expect(res.status, res.text).toBe(200);
  return (res.json as Array<{ timestamp: string }>).map((r) => r.timestamp);
};

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const queries = ingest.platform.retentionQueries;
  const catalog = queries.catalog.bind(queries);
  queries.catalog = () => {
    catalogReads++;
    return catalog();
  };
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  user = await createUser(api.url, admin, 'plain', [{ match: 'prefix', value: 'ret_', access: 'rw' }]);
}, 120_000);
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('retention per pattern', () => {
  it('is for admins: 403 to a user, 400 for a rule that cannot be, 404 removing one that does not exist', async () => {
    expect((await call(`${api.url}/api/v1/retention`, user)).status).toBe(403);
    expect((await call(`${api.url}/api/v1/retention`, user, { method: 'PUT', body: { match: 'prefix', value: 'ret_', seconds: 3 } })).status).toBe(403);
    expect((await call(`${api.url}/api/v1/retention`, admin, { method: 'PUT', body: { match: 'prefix', value: 'ret_', seconds: 3, days: 1 } })).status).toBe(
      400,
    );
    expect((await call(`${api.url}/api/v1/retention`, admin, { method: 'PUT', body: { match: 'glob', value: 'ret_', seconds: 3 } })).status).toBe(400);
    expect((await call(`${api.url}/api/v1/retention?match=prefix&value=nothing`, admin, { method: 'DELETE' })).status).toBe(404);
  });

  it('a rule of seconds: points older than it leave, newer ones and other metrics stay, the catalog follows', async () => {
    const now = Date.now();
    const old = [now - 3_600_000, now - 60_000, now - 10_000];
    const fresh = [now + 3_600_000, now + 7_200_000];
    await upload('ret_a', [...old, ...fresh]);
    await upload('other_b', old);
    const hourly = async () => {
      const qs = {
        metrics: 'ret_a',
        start_date: formatTimestamp(now - 7_200_000),
        end_date: formatTimestamp(now + 7_200_000),
        resolution: '1h',
        format: 'json',
      };
      const res = await call(`${api.url}/api/v1/metrics/download?${new URLSearchParams(qs)}`, admin);
      expect(res.status, res.text).toBe(200);
      return res.json as Array<{ bucket: string; count: number }>;
    };
    const rollupsBefore = await hourly();
    expect(rollupsBefore.reduce((n, r) => n + r.count, 0)).toBe(old.length + fresh.length);
    const set = await call(`${api.url}/api/v1/retention`, admin, { method: 'PUT', body: { match: 'prefix', value: 'ret_', seconds: 5 } });
    expect(set.status, set.text).toBe(200);
    expect(set.json.rules).toEqual([expect.objectContaining({ match: 'prefix', value: 'ret_', keep_seconds: 5, set_by: 'root' })]);
    expect((await call(`${api.url}/api/v1/retention`, admin)).json).toEqual(set.json);
    // Rules are events on the accounts topic: another api reads the same rules from the log.
    const another = await startApi(settings);
    try {
      await another.api.accounts.syncToEnd();
      expect((await call(`${another.url}/api/v1/retention`, admin)).json).toEqual(set.json);
    } finally {
      await another.close();
    }

    // The pass is a deletion in the log, by user "retention", with the rule as its reason; its
    // task ends once the points are gone and the catalog follows (docs/using/deleting.md).
    const deletions = async () => {
      const events = await call(`${api.url}/api/v1/events?${new URLSearchParams({ types: 'MetricsDeleted', format: 'ndjson' })}`, admin);
      expect(events.status, events.text).toBe(200);
      return events.text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as { event: Record<string, unknown> & { task_id: string } }).event);
    };
    await waitFor('a retention deletion of ret_a', async () => ((await deletions()).length > 0 ? true : undefined), 60_000, 200);
    const [deletion] = await deletions();
    expect((await waitForTask(api.url, admin, deletion!.task_id, 60_000)).status).toBe('succeeded');
    expect(await timestamps('ret_a')).toEqual(fresh.map(formatTimestamp));
    expect(await timestamps('other_b')).toHaveLength(old.length);
    // The rollups outlive the raw points: retention's markers leave them whole.
    expect(await hourly()).toEqual(rollupsBefore);
    const catalog = await call(`${api.url}/api/v1/metrics?${new URLSearchParams({ metrics: 'ret_a' })}`, admin);
    expect(catalog.json.metrics).toEqual([
      { metric_name: 'ret_a', points: 2, first_timestamp: formatTimestamp(fresh[0]!), last_timestamp: formatTimestamp(fresh[1]!) },
    ]);
    // One deletion: later passes leave ret_a alone while this one is applied, and find nothing after it.
    await laterPasses(3);
    expect(await deletions()).toEqual([
      expect.objectContaining({
        user_name: 'retention',
        metrics: ['ret_a'],
        points: old.length,
        reason: expect.stringContaining('retention rule prefix "ret_"'),
      }),
    ]);

    // Removed: new old points are kept from now on. A rule of a metric that does not exist keeps
    // the passes reading the catalog, so that they can be counted.
    const idle = await call(`${api.url}/api/v1/retention`, admin, { method: 'PUT', body: { match: 'exact', value: 'none_c', seconds: 5 } });
    expect(idle.status, idle.text).toBe(200);
    try {
      expect((await call(`${api.url}/api/v1/retention?match=prefix&value=ret_`, admin, { method: 'DELETE' })).status).toBe(204);
      const ruleEvents = await call(
        `${api.url}/api/v1/events?${new URLSearchParams({ types: 'RetentionRuleSet,RetentionRuleRemoved', format: 'ndjson' })}`,
        admin,
      );
      expect(ruleEvents.status, ruleEvents.text).toBe(200);
      expect(
        ruleEvents.text
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as { type: string; event: object }),
      ).toEqual([
        expect.objectContaining({ type: 'RetentionRuleSet', event: expect.objectContaining({ match: 'prefix', value: 'ret_', keep_ms: 5000, actor: 'root' }) }),
        expect.objectContaining({
          type: 'RetentionRuleSet',
          event: expect.objectContaining({ match: 'exact', value: 'none_c', keep_ms: 5000, actor: 'root' }),
        }),
        expect.objectContaining({ type: 'RetentionRuleRemoved', event: expect.objectContaining({ match: 'prefix', value: 'ret_', actor: 'root' }) }),
      ]);
      await api.api.accounts.syncToEnd();
      await upload('ret_a', [now - 120_000]);
      await laterPasses(3);
      // A pass writes its deletion event before it ends: none was written for the removed rule.
      expect(await deletions()).toHaveLength(1);
      expect(await timestamps('ret_a')).toHaveLength(fresh.length + 1);
    } finally {
      // Whatever failed above, the next test finds no rule of this one's.
      expect((await call(`${api.url}/api/v1/retention?match=exact&value=none_c`, admin, { method: 'DELETE' })).status).toBe(204);
    }
  });

  it("meridian retention set, ls and rm with an admin key; a user's key is refused", async () => {
    const env = (key: string) => ({ PATH: process.env.PATH ?? '', HOME: '/nonexistent', MERIDIAN_URL: api.url, MERIDIAN_API_KEY: key });
    const set = await userCli(['retention', 'set', '--metric', 'cli_x', '--days', '30', '--json'], env(admin));
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toContainEqual(expect.objectContaining({ match: 'exact', value: 'cli_x', days: 30, keep_seconds: 2_592_000 }));
    const ls = await userCli(['retention', 'ls'], env(admin));
    expect(ls.stdout).toContain('cli_x  keeps 30 days');
    expect((await userCli(['retention', 'ls'], env(user))).code).toBe(1);
    expect((await userCli(['retention', 'set', '--metric', 'cli_x'], env(admin))).code).toBe(2);
    const rm = await userCli(['retention', 'rm', '--metric', 'cli_x'], env(admin));
    expect([rm.code, rm.stdout.trim()]).toEqual([0, 'removed the retention rule of exact cli_x']);
    expect((await userCli(['retention', 'ls', '--json'], env(admin))).stdout.trim()).toBe('[]');
  });
});
