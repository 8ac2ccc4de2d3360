import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { startQueryGate, type GateRule, type QueryGate } from '../support/query-gate.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Staged uploads under faults, with the real ingest process behind a query
 * gate in front of ClickHouse (test/support/query-gate.ts): the ingest is killed with SIGKILL at
 * each step of the seal procedure (stage.ts), and ClickHouse refuses, or never answers, the
 * stage inserts of the upload job. After the ingest is started again each upload has every point
 * exactly once, the metric catalog counts exactly what points holds, its seals are recorded
 * (one per partition it touched) and no stage table is left.
 */
const ROWS = 60_000;
const METRICS = 10;
const iso = (i: number) => formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000);

/** A download-layout file over ten metrics; the values are unique (0..ROWS-1), so a doubled or lost point shows. */
function file(prefix: string): string {
  const rows = Array.from({ length: ROWS }, (_, i) => `${prefix}.m${i % METRICS},${iso(i)},${i},${iso(0)}`);
  return `metric_name,timestamp,metric_numeric_value,updated_at\n${rows.join('\n')}\n`;
}

const ATTACH = /ALTER TABLE `?points`? ATTACH PARTITION tuple\(\) FROM points_stage_/;
const CATALOG = /INSERT INTO `?metric_catalog`? SELECT .* FROM points_stage_/;
const SEAL_ROW = /INSERT INTO points_seals/;
const DROP_STAGE = /DROP TABLE IF EXISTS points_stage_/;
const STAGE_INSERT = /^INSERT INTO points_stage_\w+ \(.*\) FORMAT Native/;

function harness(overrides: Record<string, string>) {
  const settings = isolatedSettings({
    MERIDIAN_UPLOAD_STAGING: 'on',
    MERIDIAN_STAGE_MIN_BYTES: '1',
    MERIDIAN_POINT_BATCH_SIZE: '5000',
    MERIDIAN_PROJECTOR_BATCH_ROWS: '20000',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    MERIDIAN_MAX_UPLOAD_BYTES: '20000000',
    ...overrides,
  });
  const h = {
    settings,
    api: undefined as unknown as RunningApi,
    gate: undefined as unknown as QueryGate,
    key: '',
    processes: [] as AppProcess[],
    /** The ingest process, its ClickHouse behind the gate. */
    ingest(): AppProcess {
      const proc = startApp('ingest', { ...settings, CLICKHOUSE_URL: h.gate.url });
      h.processes.push(proc);
      return proc;
    },
    async query(sql: string): Promise<string> {
      const res = await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent(sql)}`);
      const text = (await res.text()).trim();
      if (!res.ok) throw new Error(`${sql}: ${text}`);
      return text;
    },
    async number(sql: string): Promise<number> {
      return Number(await h.query(sql));
    },
    async upload(prefix: string): Promise<string> {
      const form = new FormData();
      form.set('file', new Blob([file(prefix)]), 'points.csv');
      const res = await fetch(`${h.api.url}/api/v1/metrics_file_upload`, { method: 'POST', headers: { Authorization: `Bearer ${h.key}` }, body: form });
      expect(res.status).toBe(202);
      return ((await res.json()) as { task_id: string }).task_id;
    },
    /** Every point once, the catalog exact, one seal per partition the task touched, no stage left, the task succeeded. */
    async expectExact(taskId: string, prefix: string): Promise<number> {
      expect((await waitForTask(h.api.url, h.key, taskId, 180_000)).status).toBe('succeeded');
      const ofTask = `FROM points WHERE task_id = '${taskId}'`;
      expect(await h.number(`SELECT count() ${ofTask}`)).toBe(ROWS);
      expect(await h.number(`SELECT uniqExact(value) ${ofTask}`)).toBe(ROWS);
      expect(await h.number(`SELECT uniqExact(kafka_partition, kafka_offset, row_in_batch) ${ofTask}`)).toBe(ROWS);
      const perMetric = `SELECT metric_name, count() AS n, min(ts), max(ts) FROM points WHERE startsWith(metric_name, '${prefix}.') GROUP BY metric_name ORDER BY metric_name`;
      const catalog = `SELECT metric_name, countMerge(points) AS n, minMerge(first_ts), maxMerge(last_ts) FROM metric_catalog WHERE startsWith(metric_name, '${prefix}.') GROUP BY metric_name ORDER BY metric_name`;
      expect((await h.query(catalog)).split('\n')).toEqual((await h.query(perMetric)).split('\n'));
      expect((await h.query(catalog)).split('\n')).toHaveLength(METRICS);
      const partitions = await h.number(`SELECT uniqExact(kafka_partition) ${ofTask}`);
      expect(partitions, 'ten metrics over the points partitions').toBeGreaterThan(1);
      expect(await h.number(`SELECT count() FROM points_seals WHERE task_id = '${taskId}'`)).toBe(partitions);
      expect(await h.query("SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_')")).toBe('');
      return partitions;
    },
  };
  beforeAll(async () => {
    h.gate = await startQueryGate(settings.CLICKHOUSE_URL);
    h.api = await startApi(settings);
    h.key = await bootstrapAdmin(settings);
    await h.api.api.accounts.syncToEnd();
  });
  afterAll(async () => {
    await Promise.all(h.processes.map((p) => p.stop('SIGKILL')));
    await h.api?.close();
    await h.gate?.close();
  });
  return h;
}

const exited = (proc: AppProcess) => (proc.child.exitCode !== null || proc.child.signalCode !== null ? true : undefined);
/** The `how` of each staged seal a process logged (stage.ts SealOutcome). */
const sealOutcomes = (proc: AppProcess) =>
  proc
    .output()
    .split('\n')
    .filter((l) => l.includes('"msg":"staged upload sealed into points"'))
    .map((l) => JSON.parse(l) as { how: string; refilled: boolean });

describe('staged uploads: the ingest killed at each step of a seal', () => {
  const h = harness({});

  /** What the killed process left, for the first share it sealed (the others were not reached). */
  type AtKill = { points: number; cataloged: number; seals: number; stageOfRecordedSeal: number };
  /** One partition's share is in points, not the whole upload. */
  const oneShare = (s: AtKill) => {
    expect(s.points).toBeGreaterThan(0);
    expect(s.points).toBeLessThan(ROWS);
  };
  /**
   * What the restarted process's seals were: every share attached ('attached'); the killed one
   * found attached and completed ('found attached'); or the killed one's seal recorded, so it is
   * only announced (and its stage dropped) and the others attached ('recorded').
   */
  const steps: Array<{ step: string; rule: Omit<GateRule, 'then'>; left: (s: AtKill) => void; then: 'attached' | 'found attached' | 'recorded' }> = [
    {
      step: 'before the ATTACH reaches the server',
      rule: { match: ATTACH, action: 'crash_before' },
      left: (s) => expect(s).toEqual({ points: 0, cataloged: 0, seals: 0, stageOfRecordedSeal: 0 }),
      then: 'attached',
    },
    {
      step: 'after the ATTACH (rows visible, the catalog short)',
      rule: { match: ATTACH, action: 'crash_after' },
      left: (s) => {
        oneShare(s);
        expect(s).toEqual({ points: s.points, cataloged: 0, seals: 0, stageOfRecordedSeal: 0 });
      },
      then: 'found attached',
    },
    {
      step: 'after the catalog insert (no seal row)',
      rule: { match: CATALOG, action: 'crash_after' },
      left: (s) => {
        oneShare(s);
        expect(s).toEqual({ points: s.points, cataloged: s.points, seals: 0, stageOfRecordedSeal: 0 });
      },
      then: 'found attached',
    },
    {
      step: 'after the seal row (the stage not dropped)',
      rule: { match: SEAL_ROW, action: 'crash_after' },
      left: (s) => {
        oneShare(s);
        expect(s).toEqual({ points: s.points, cataloged: s.points, seals: 1, stageOfRecordedSeal: 1 });
      },
      then: 'recorded',
    },
    {
      step: 'after the stage is dropped (the seal not announced)',
      rule: { match: DROP_STAGE, after: SEAL_ROW, action: 'crash_after' },
      left: (s) => {
        oneShare(s);
        expect(s).toEqual({ points: s.points, cataloged: s.points, seals: 1, stageOfRecordedSeal: 0 });
      },
      then: 'recorded',
    },
  ];

  it.each(steps.map((s, i) => ({ ...s, i })))(
    'killed $step: after a restart every point once, the catalog exact, the seals recorded, no stage left',
    async ({ i, rule, left, then }) => {
      const prefix = `seal${i}`;
      let proc: AppProcess | null = null;
      h.gate.set({ ...rule, once: true, then: () => proc?.child.kill('SIGKILL') });
      proc = h.ingest();
      const taskId = await h.upload(prefix);
      await waitFor('the ingest killed at the step', () => exited(proc), 120_000, 50).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}\n${proc.output().slice(-3000)}`);
      });
      expect(h.gate.hits()).toEqual([1]);
      const [recorded] = (await h.query(`SELECT attempt, kafka_partition FROM points_seals WHERE task_id = '${taskId}' FORMAT TSV`))
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t'));
      left({
        points: await h.number(`SELECT count() FROM points WHERE task_id = '${taskId}'`),
        cataloged: await h.number(`SELECT countMerge(points) FROM metric_catalog WHERE startsWith(metric_name, '${prefix}.')`),
        seals: await h.number(`SELECT count() FROM points_seals WHERE task_id = '${taskId}'`),
        stageOfRecordedSeal:
          recorded === undefined
            ? 0
            : await h.number(`SELECT count() FROM system.tables WHERE database = currentDatabase() AND endsWith(name, '_${recorded[0]}_p${recorded[1]}')`),
      });

      h.gate.set();
      const restarted = h.ingest();
      try {
        const partitions = await h.expectExact(taskId, prefix);
        const hows = sealOutcomes(restarted)
          .map((o) => o.how)
          .sort();
        if (then === 'recorded') expect(hows).toEqual(Array(partitions - 1).fill('attached'));
        else if (then === 'attached') expect(hows).toEqual(Array(partitions).fill('attached'));
        else expect(hows).toEqual([...Array(partitions - 1).fill('attached'), 'found attached']);
      } catch (error) {
        throw new Error(`${(error as Error).message}\nrestarted process:\n${restarted.output().slice(-4000)}`);
      }
      expect(await restarted.stop('SIGTERM')).toBe(0);
    },
  );
});

describe('staged uploads: ClickHouse refusing or not answering the stage inserts', () => {
  // A short bound on the wait for the last stage inserts, so the held ones are given up soon.
  const h = harness({ MERIDIAN_STAGE_FINISH_TIMEOUT_MS: '3000' });

  it.each([
    { how: 'refused', action: 'refuse' as const, warning: 'staging insert failed' },
    { how: 'never answered', action: 'hold' as const, warning: 'staging inserts given up' },
  ])('stage inserts $how: the upload succeeds, its stages refilled from the log at the seals', async ({ how, action, warning }) => {
    const prefix = `stage.${action}`;
    h.gate.set({ match: STAGE_INSERT, action });
    const proc = h.ingest();
    const taskId = await h.upload(prefix);
    // The job's inserts meet the fault until its transaction is committed; the seals' refills
    // (retried by the projector meanwhile) then get through.
    const written = await waitFor(
      'the upload written to the log',
      () =>
        proc
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"upload written to the log"')),
      120_000,
      50,
    );
    const [met] = h.gate.hits();
    h.gate.set();
    try {
      expect(met, 'stage inserts met the fault').toBeGreaterThan(0);
      const logged = JSON.parse(written) as { staged: string; broken_stages: number[]; partitions: number };
      expect(logged.broken_stages.length, `every partition's stage ${how}`).toBe(logged.partitions);
      expect(proc.output()).toContain(warning);
      await h.expectExact(taskId, prefix);
      const outcomes = sealOutcomes(proc);
      expect(outcomes).toHaveLength(logged.partitions);
      expect(outcomes.every((o) => o.how === 'attached' && o.refilled)).toBe(true);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nprocess:\n${proc.output().slice(-4000)}`);
    }
    expect(await proc.stop('SIGTERM')).toBe(0);
  });
});
