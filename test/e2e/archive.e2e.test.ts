import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { archiveChains, chainSpan } from '@meridian/kafka';
import { archiveObjects } from '@meridian/platform';
import { tableChecksums } from '@meridian/replay';
import { bootstrapAdmin } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { meridian } from '../support/cli.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The brokers' bounded window against the real stack: the ingest worker archives the points
 * topic into the bucket and trims the brokers below what is archived, projected and past a
 * retention of one second; `meridian replay rebuild points` then reads the archive and the
 * brokers' tail as one history into a table identical to the live one.
 */
const archiving = {
  MERIDIAN_ARCHIVE: 'true',
  MERIDIAN_ARCHIVE_RETENTION_MS: '1000',
  MERIDIAN_ARCHIVE_INTERVAL_MS: '300',
  MERIDIAN_ARCHIVE_SEGMENT_BYTES: '16384',
};
const settings = isolatedSettings({ ...archiving, MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
const METRICS = 4;
const T0 = Date.UTC(2024, 0, 1);
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;

async function upload(metric: string, first: number, count: number): Promise<number> {
  const values = Array.from({ length: count }, (_, i) => ({ timestamp: formatTimestamp(T0 + (first + i) * 1000), value: (first + i) / 8 }));
  const res = await call(`${api.url}/api/v1/metrics/upload`, admin, { method: 'POST', body: { metric_name: metric, values } });
  expect(res.status, res.text).toBe(202);
  expect((await waitForTask(api.url, admin, res.json.task_id as string, 120_000)).status).toBe('succeeded');
  return count;
}

const scalar = async (sql: string): Promise<number> => {
  const rows = await (await api.platform.clickhouse.query({ query: `SELECT toString((${sql})) AS v`, format: 'JSONEachRow' })).json<{ v: string }>();
  return Number(rows[0]!.v);
};

/**
 * The committed records the brokers still hold in the points topic, read from their first offset;
 * undefined when the archiver trimmed the log under the read (the read says so rather than skip).
 */
async function recordsOnBrokers(): Promise<number | undefined> {
  const log = api.platform.log;
  const { low, end } = await log.offsets(api.platform.topics.points);
  const ranges = [...end].map(([partition, hi]) => ({ topic: api.platform.topics.points, partition, start: low.get(partition)!, end: hi }));
  let n = 0;
  try {
    for await (const batch of log.readRanges(ranges, { groupId: `${settings.MERIDIAN_TOPIC_PREFIX}e2e-brokers`, sequential: false }))
      n += batch.messages.length;
  } catch (error) {
    if (/left the brokers while they were read/.test(String(error))) return undefined;
    throw error;
  }
  return n;
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
}, 120_000);

afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('the brokers hold a bounded window', () => {
  it('points past the retention leave the brokers, and a rebuild from archive and log is identical to the live table', async () => {
    let points = 0;
    for (let u = 0; u < 12; u++) points += await upload(`arc.m${u % METRICS}`, u * 2000, 2000);
    expect(await scalar('SELECT count() FROM points')).toBe(points);

    // Archived, projected and a second old: every point batch leaves the brokers, whose logs now begin later.
    await waitFor('the brokers to hold no point batch', async () => ((await recordsOnBrokers()) === 0 ? true : undefined), 90_000, 500);
    const { low, end } = await api.platform.log.offsets(api.platform.topics.points);
    for (const [p, hi] of end) if (hi > 0) expect(low.get(p), `partition ${p}`).toBeGreaterThan(0);
    const chains = await archiveChains(archiveObjects(api.platform.blobs), api.platform.topics.points);
    for (const [p, lo] of low) if (lo > 0) expect(chainSpan(chains.get(p))!.end, `partition ${p}`).toBeGreaterThanOrEqual(lo);

    // A worker without the archiver takes over: what is uploaded now stays on the brokers.
    const archivedPoints = points;
    const cut = Date.now();
    await new Promise((r) => setTimeout(r, 50));
    await ingest.close();
    ingest = await startWorker({ ...settings, MERIDIAN_ARCHIVE: false });
    for (let u = 12; u < 16; u++) points += await upload(`arc.m${u % METRICS}`, u * 2000, 2000);
    expect(await recordsOnBrokers()).toBeGreaterThan(0);
    expect(await scalar('SELECT count() FROM points')).toBe(points);

    const run = await meridian(settings, ['replay', 'rebuild', 'points', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as {
      table: string;
      starts: Record<string, number>;
      stats: { points: number };
      verification: { ok: boolean; mismatched_metrics: number };
    };
    // From offset 0 of every partition, though the brokers' logs begin later.
    expect(Object.values(result.starts).every((s) => s === 0)).toBe(true);
    expect(result.stats.points).toBe(points);
    expect(result.verification).toMatchObject({ ok: true, mismatched_metrics: 0 });
    const live = await tableChecksums(api.platform.clickhouse, 'points');
    expect(live.size).toBe(METRICS);
    expect(await tableChecksums(api.platform.clickhouse, result.table)).toEqual(live);
    expect(await scalar(`SELECT count() FROM ${result.table}`)).toBe(points);

    // Point in time: a time before the brokers' first record is found in the archive, and the copy holds what was there then.
    const asof = `${settings.CLICKHOUSE_DATABASE}_asof`;
    const copy = await meridian(settings, ['replay', 'rebuild', 'points', '--to', new Date(cut).toISOString(), '--database', asof, '--json']);
    expect(copy.code, copy.stderr).toBe(0);
    expect((JSON.parse(copy.stdout) as { stats: { points: number } }).stats.points).toBe(archivedPoints);
    expect(await scalar(`SELECT count() FROM ${asof}.points`)).toBe(archivedPoints);
    await api.platform.clickhouse.command({ query: `DROP DATABASE ${asof}` });

    // The events export reads the same history: every point batch once, the archived ones included.
    const res = await fetch(`${api.url}/api/v1/events?${new URLSearchParams({ types: 'PointBatch', format: 'ndjson', max_events: '1000000' })}`, {
      headers: { Authorization: `Bearer ${admin}` },
    });
    expect(res.status).toBe(200);
    const lines = (await res.text()).split('\n').filter((l) => l !== '');
    expect(lines.length).toBe(await scalar('SELECT uniqExact(kafka_partition, kafka_offset) FROM points'));
  }, 300_000);
});
