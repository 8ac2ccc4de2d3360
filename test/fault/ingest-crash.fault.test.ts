import { describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { startApp } from '../support/processes.ts';
import { faultWorld } from '../support/fault-setup.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

const UPLOADS = 10;
const POINTS_PER_UPLOAD = 100_000;
const TOTAL = UPLOADS * POINTS_PER_UPLOAD;
const KILLS = 4;

/**
 * Invariant 2 through the whole pipeline: uploads go in through the api; the ingest process
 * (command handler and projector) is killed with SIGKILL while it works and started again.
 * Every accepted point must be stored exactly once. Run with staging off (every upload
 * projected after its commit) and on (each 100k-point upload is staged, 20 batches,
 * so kills land in its stage inserts, before and after its commit, and inside its seals). The
 * archiver is on, with a window of one second: the brokers drop what it archived while the
 * projector works, and a seal's refill reads the archive when the brokers no longer hold its batches.
 */
describe.each(['off', 'on'] as const)(
  `ingest killed with SIGKILL ${KILLS} times during a ${TOTAL.toLocaleString('en')}-point ingest, staging %s`,
  (staging) => {
    // Every kill may land in the same upload: the crash-loop breaker (crash-loop.fault.test.ts) must not end this one.
    // Every upload is accepted before any ingest runs: the user's backlog must hold them all.
    const settings = isolatedSettings({
      MERIDIAN_UPLOAD_BACKLOG_PER_USER: String(UPLOADS),
      MERIDIAN_UPLOAD_STAGING: staging,
      MERIDIAN_STAGE_MIN_BYTES: '1',
      MERIDIAN_POINT_BATCH_SIZE: '5000',
      MERIDIAN_PROJECTOR_BATCH_ROWS: '20000',
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      MERIDIAN_MAX_COMMAND_STARTS: String(KILLS + 1),
      // The archiver runs in the killed process too, trimming a window of one second behind the projector.
      MERIDIAN_ARCHIVE: 'true',
      MERIDIAN_ARCHIVE_RETENTION_MS: '1000',
      MERIDIAN_ARCHIVE_INTERVAL_MS: '200',
      MERIDIAN_ARCHIVE_SEGMENT_BYTES: '1048576',
    });
    const world = faultWorld(settings);

    it('stores every accepted point exactly once', async () => {
      const taskIds: string[] = [];
      for (let u = 0; u < UPLOADS; u++) {
        const lines = Array.from({ length: POINTS_PER_UPLOAD }, (_, i) => `${formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000)},${u * POINTS_PER_UPLOAD + i}`);
        const res = await fetch(`${world.api.url}/api/v1/metrics_file_upload?metric_name=crash.${u}`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${world.key}` },
          body: `${lines.join('\n')}\n`,
        });
        expect(res.status).toBe(202);
        taskIds.push(((await res.json()) as { task_id: string }).task_id);
      }

      const count = async () => {
        const res = await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=SELECT%20count()%20FROM%20points`);
        return Number((await res.text()).trim());
      };
      let kills = 0;
      for (let k = 0; k < KILLS; k++) {
        const proc = startApp('ingest', settings);
        world.processes.push(proc);
        // Let it get into the work (consumer group joined, some rows written), then crash it.
        const before = await count();
        await waitFor(
          'the ingest to make progress',
          async () => ((await count()) > before || proc.output().includes('upload written') ? true : undefined),
          60_000,
          50,
        );
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 150)));
        await proc.stop('SIGKILL');
        kills++;
        if ((await count()) >= TOTAL) break;
      }
      expect(kills).toBeGreaterThanOrEqual(3);
      const last = startApp('ingest', settings);
      world.processes.push(last);
      for (const id of taskIds) expect((await waitForTask(world.api.url, world.key, id, 300_000)).status).toBe('succeeded');

      const query = async (sql: string) =>
        (await (await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent(sql)}`)).text()).trim();
      expect(Number(await query('SELECT count() FROM points'))).toBe(TOTAL);
      // Values are unique by construction: a missing or doubled point changes these.
      expect(Number(await query('SELECT uniqExact(value) FROM points'))).toBe(TOTAL);
      expect(Number(await query('SELECT min(value) FROM points'))).toBe(0);
      expect(Number(await query('SELECT max(value) FROM points'))).toBe(TOTAL - 1);
      expect(await query('SELECT metric_name, count() FROM points GROUP BY metric_name HAVING count() != 100000')).toBe('');
      expect(Number(await query('SELECT countMerge(points) FROM metric_catalog'))).toBe(TOTAL);
      // The window was in effect: the brokers' points logs no longer begin at 0.
      await waitFor(
        'the archiver to trim the brokers',
        async () => ([...(await world.api.platform.log.offsets(world.api.platform.topics.points)).low.values()].some((low) => low > 0) ? true : undefined),
        60_000,
        200,
      );
      if (staging === 'on') {
        // Every upload was staged (one metric: one partition, one seal); the stages of killed runs
        // were dropped by their task's next run, the committed runs' by their seals.
        expect(Number(await query('SELECT count() FROM points_seals'))).toBe(UPLOADS);
        expect(Number(await query('SELECT uniqExact(task_id) FROM points_seals'))).toBe(UPLOADS);
        expect(await query("SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_')")).toBe('');
      }
    });
  },
);
