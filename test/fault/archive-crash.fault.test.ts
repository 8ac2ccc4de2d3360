import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { archiveChains, archivePrefix, chainSpan } from '@meridian/kafka';
import { archiveObjects } from '@meridian/platform';
import { tableChecksums } from '@meridian/replay';
import { bootstrapAdmin } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { meridian } from '../support/cli.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

const UPLOADS = 8;
const POINTS_PER_UPLOAD = 50_000;
const TOTAL = UPLOADS * POINTS_PER_UPLOAD;
const KILLS = 4;
const UPLOADS_PER_START = UPLOADS / KILLS;

/**
 * The archiver killed with SIGKILL mid-segment, again and again, while it archives and trims a
 * window of one second and the projector works beside it in the same process: every accepted
 * point is stored once in the live table, the archive holds each record once, and a rebuild from
 * archive and log gives the live table back.
 */
describe(`ingest with the archiver killed with SIGKILL ${KILLS} times during a ${TOTAL.toLocaleString('en')}-point ingest`, () => {
  const settings = isolatedSettings({
    MERIDIAN_UPLOAD_BACKLOG_PER_USER: String(UPLOADS),
    MERIDIAN_UPLOAD_STAGING: 'off',
    MERIDIAN_POINT_BATCH_SIZE: '5000',
    MERIDIAN_PROJECTOR_BATCH_ROWS: '20000',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    MERIDIAN_MAX_COMMAND_STARTS: String(KILLS + 1),
    MERIDIAN_ARCHIVE: 'true',
    MERIDIAN_ARCHIVE_RETENTION_MS: '1000',
    MERIDIAN_ARCHIVE_INTERVAL_MS: '100',
    MERIDIAN_ARCHIVE_SEGMENT_BYTES: '65536',
  });
  let api: RunningApi;
  let key: string;
  const processes: AppProcess[] = [];
  const query = async (sql: string) =>
    (await (await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent(sql)}`)).text()).trim();
  const objects = () => archiveObjects(api.platform.blobs);
  const entries = async () => (await objects().list(`${archivePrefix(api.platform.topics.points)}index/`)).length;

  beforeAll(async () => {
    api = await startApi(settings);
    key = await bootstrapAdmin(settings);
    await api.api.accounts.syncToEnd();
  });
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await api?.close();
  });

  it('stores every accepted point once, archives every record once, and rebuilds the live table from archive and log', async () => {
    const taskIds: string[] = [];
    const upload = async (u: number) => {
      const lines = Array.from({ length: POINTS_PER_UPLOAD }, (_, i) => `${formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000)},${u * POINTS_PER_UPLOAD + i}`);
      const res = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=arcrash.${u}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}` },
        body: `${lines.join('\n')}\n`,
      });
      expect(res.status).toBe(202);
      taskIds.push(((await res.json()) as { task_id: string }).task_id);
    };

    let kills = 0;
    for (let k = 0; k < KILLS; k++) {
      // Each start gets points no worker has produced yet: the run before may have archived
      // everything it had, and a new segment must still come for the kill to land in a pass.
      const before = await entries();
      for (let u = k * UPLOADS_PER_START; u < (k + 1) * UPLOADS_PER_START; u++) await upload(u);
      const proc = startApp('ingest', settings);
      processes.push(proc);
      // Into the archiving (a new index entry since the last kill), then a crash at a random moment of a pass.
      await waitFor('the archiver to write a segment', async () => ((await entries()) > before ? true : undefined), 90_000, 20).catch((error: unknown) => {
        // What the worker said is what tells why no segment came: kept in the failure.
        throw new Error(`${String(error)}\nstart ${k + 1}; the worker's last output:\n${proc.output().split('\n').slice(-60).join('\n')}`);
      });
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 200)));
      await proc.stop('SIGKILL');
      kills++;
    }
    expect(kills).toBe(KILLS);
    processes.push(startApp('ingest', settings));
    for (const id of taskIds) expect((await waitForTask(api.url, key, id, 300_000)).status).toBe('succeeded');

    // Each pass read in a group of its own: the killed passes' groups (their dead member gone after
    // its session) are deleted by the passes after them, and none is left but a pass's under way.
    const passGroups = async () =>
      (await api.platform.admin.listGroups()).groups.filter((g) => g.groupId.startsWith(`${api.platform.groups.projector}-archive-pass-`));
    await waitFor("the killed passes' groups to be deleted", async () => ((await passGroups()).length <= 1 ? true : undefined), 120_000, 500);

    expect(Number(await query('SELECT count() FROM points'))).toBe(TOTAL);
    // Values are unique by construction: a missing or doubled point changes these.
    expect(Number(await query('SELECT uniqExact(value) FROM points'))).toBe(TOTAL);
    expect(Number(await query('SELECT countMerge(points) FROM metric_catalog'))).toBe(TOTAL);

    // The window passes: the brokers' logs begin where the archive continues them.
    const topic = api.platform.topics.points;
    await waitFor(
      'the brokers to trim every partition',
      async () => {
        const { low, end } = await api.platform.log.offsets(topic);
        return [...end].every(([p, hi]) => hi === 0 || low.get(p)! > 0) ? true : undefined;
      },
      90_000,
      200,
    );
    const { low } = await api.platform.log.offsets(topic);
    const chains = await archiveChains(objects(), topic);
    for (const [p, lo] of low) if (lo > 0) expect(chainSpan(chains.get(p)), `partition ${p}`).toMatchObject({ first: 0, end: expect.any(Number) as number });
    for (const [p, lo] of low) if (lo > 0) expect(chainSpan(chains.get(p))!.end).toBeGreaterThanOrEqual(lo);

    const run = await meridian(settings, ['replay', 'rebuild', 'points', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { table: string; stats: { points: number }; verification: { ok: boolean } };
    expect(result.stats.points).toBe(TOTAL);
    expect(result.verification.ok).toBe(true);
    expect(await tableChecksums(api.platform.clickhouse, result.table)).toEqual(await tableChecksums(api.platform.clickhouse, 'points'));
    expect(Number(await query(`SELECT uniqExact(value) FROM ${result.table}`))).toBe(TOTAL);
  });
});
