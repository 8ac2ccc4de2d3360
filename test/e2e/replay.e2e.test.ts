import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import avro from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPointsStages, serverCapabilities } from '@meridian/clickhouse';
import { formatTimestamp, type PointsFact } from '@meridian/domain';
import { createEventCodec, fingerprintOf, parseHeader, SchemaRegistry, type EventLike } from '@meridian/events';
import { createProducer } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { dropGeneration, listGenerations, projectorGroupId, rebuildPoints, rebuildRange, tableChecksums } from '@meridian/replay';
import { decodeExportCursor, type LoggedEvent } from '@meridian/export';
import { fromFixtureJson, type EventFixture } from '../fixtures/events/fixture.ts';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { meridian } from '../support/cli.ts';
import { startWorker } from '../support/ingest.ts';
import { rollupDumpSql } from '../support/rollup-reference.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';
import { writeUpload, type HandBatch, type HandUpload, type WrittenUpload } from '../support/staged-log.ts';

/**
 * Replay against the real stack: rebuilds of the points projection (into generations, swapped
 * in while ingestion runs, and into a separate database up to a point in time), determinism,
 * and the export of the raw event history.
 */
const POINTS = Number(process.env.REPLAY_E2E_POINTS ?? 1_000_000);
const PER_UPLOAD = 50_000;
const METRICS = 10;
const T0 = Date.UTC(2024, 0, 1);
// Uploads arrive back to back during a rebuild: no per-user rate limit here.
// The swap tests keep a producer uploading through a freeze of the live tables, when nothing
// finishes, and assert that uploads are still accepted then: the per-user backlog must not hold them.
const settings = isolatedSettings({ MERIDIAN_MAX_ROWS_CEILING: '5000000', MERIDIAN_RATE_LIMIT_PER_SECOND: '0', MERIDIAN_UPLOAD_BACKLOG_PER_USER: '1000' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;
let analyst: string;

const scalar = async (sql: string): Promise<number> => {
  const rows = await (await api.platform.clickhouse.query({ query: `SELECT toString((${sql})) AS v`, format: 'JSONEachRow' })).json<{ v: string }>();
  return Number(rows[0]!.v);
};
const rowsOf = async <T>(sql: string): Promise<T[]> => (await api.platform.clickhouse.query({ query: sql, format: 'JSONEachRow' })).json<T>();
const catalog = () =>
  rowsOf<{ metric_name: string; points: string; first_ts: string; last_ts: string }>(
    'SELECT metric_name, toString(countMerge(points)) AS points, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM metric_catalog GROUP BY metric_name ORDER BY metric_name',
  );
/** A rollup table's buckets, every aggregate printed (migration 010). */
const rollupOf = (table: string) => rowsOf<Record<string, string>>(rollupDumpSql(table));
const rollupCounts = (table: string) =>
  rowsOf<{ metric_name: string; points: string }>(
    `SELECT metric_name, toString(countMerge(rows)) AS points FROM ${table} GROUP BY metric_name ORDER BY metric_name`,
  );
const pointsPerMetric = () =>
  rowsOf<{ metric_name: string; points: string; first_ts: string; last_ts: string }>(
    'SELECT metric_name, toString(count()) AS points, toString(min(ts)) AS first_ts, toString(max(ts)) AS last_ts FROM points GROUP BY metric_name ORDER BY metric_name',
  );

/** A CSV file upload of `count` points of one metric, the i-th valued `valueOf(i)`; resolves with the task id once accepted. */
async function uploadFile(metric: string, first: number, count: number, valueOf = (i: number) => i / 4): Promise<string> {
  const body = Readable.from(
    (function* () {
      for (let i = first; i < first + count;) {
        const lines: string[] = [];
        for (let k = 0; k < 10_000 && i < first + count; k++, i++) lines.push(`${formatTimestamp(T0 + i * 1000)},${valueOf(i)}`);
        yield `${lines.join('\n')}\n`;
      }
    })(),
  );
  const res = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=${encodeURIComponent(metric)}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${admin}` },
    body: Readable.toWeb(body) as never,
    duplex: 'half',
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { task_id: string }).task_id;
}

async function uploadJson(metric: string, values: Array<[number, number]>): Promise<string> {
  const res = await call(`${api.url}/api/v1/metrics/upload`, admin, {
    method: 'POST',
    body: { metric_name: metric, values: values.map(([ts, value]) => ({ timestamp: formatTimestamp(ts), value })) },
  });
  expect(res.status, res.text).toBe(202);
  return res.json.task_id as string;
}

/** SHA-256 and size of a download, streamed (the 1M-row CSV is never held). */
async function downloadDigest(qs: Record<string, string>, key = analyst): Promise<{ status: number; sha256: string; bytes: number; lines: number }> {
  const res = await fetch(`${api.url}/api/v1/metrics/download?${new URLSearchParams(qs)}`, {
    headers: { Authorization: `Bearer ${key}`, 'Accept-Encoding': 'identity' },
  });
  const hash = createHash('sha256');
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    bytes += chunk.length;
    for (const b of chunk) if (b === 10) lines++;
  }
  return { status: res.status, sha256: hash.digest('hex'), bytes, lines };
}

/**
 * These swap tests drive the live api and ingest worker beside the swap, and drop or stop the
 * live table: they assume the RENAME swap of an Ordinary database (ClickHouse 18.16, our local
 * and CI server). The Atomic swap (EXCHANGE TABLES) is tested in test/modern; elsewhere these
 * tests are skipped (and say so).
 */
async function skipUnlessSwappable(ctx: { skip: (note?: string) => void }, platform: Platform): Promise<void> {
  const engine = (await serverCapabilities(platform.clickhouse)).databaseEngine;
  if (engine !== 'Ordinary') ctx.skip(`these swap tests are for Ordinary databases (the Atomic swap: test/modern); this one is ${engine}`);
}

async function cli(args: string[]) {
  const result = await meridian(settings, args);
  if (result.code !== 0) throw new Error(`meridian ${args.join(' ')} exited ${result.code}:\n${result.stderr}\n${result.stdout}`);
  return result;
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'rp.', access: 'r' }]);
}, 300_000);

afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('rebuilding the points projection', () => {
  const accepted = new Map<string, number>(); // task id → points accepted
  let before: Awaited<ReturnType<typeof downloadDigest>>;

  beforeAll(async () => {
    // POINTS points in uploads of PER_UPLOAD over METRICS metrics, 4 at a time.
    const uploads = POINTS / PER_UPLOAD;
    let next = 0;
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < uploads) {
          const u = next++;
          ids.push(await uploadFile(`rp.m${u % METRICS}`, u * PER_UPLOAD, PER_UPLOAD));
        }
      }),
    );
    for (const id of ids) {
      const task = await waitForTask(api.url, admin, id, 600_000);
      expect(task.status).toBe('succeeded');
      accepted.set(id, task.result!.points_accepted);
    }
    expect(await scalar('SELECT count() FROM points')).toBe(POINTS);
    before = await downloadDigest({ metrics: 'rp.', pattern: 'starts_with', max_rows: String(POINTS) });
    expect(before.status).toBe(200);
    expect(before.lines).toBe(POINTS + 1);
  }, 900_000);

  it('two rebuilds of the same range give identical tables, equal to the live one', async () => {
    const live = await tableChecksums(api.platform.clickhouse, 'points');
    const first = await rebuildPoints(api.platform);
    const second = await rebuildPoints(api.platform, {
      to: { kind: 'offsets', offsets: new Map(Object.entries(first.ends).map(([p, e]) => [Number(p), e - 1])) },
    });
    expect(first.verification?.ok).toBe(true);
    expect(first.verification?.mismatched_metrics).toBe(0);
    expect(first.stats.points).toBe(POINTS);
    expect(second.ends).toEqual(first.ends);
    const a = await tableChecksums(api.platform.clickhouse, first.table);
    const b = await tableChecksums(api.platform.clickhouse, second.table);
    expect(a.size).toBe(Math.min(METRICS, POINTS / PER_UPLOAD));
    expect(b).toEqual(a);
    expect(a).toEqual(live);
    // Nothing of either generation is in the live catalog's data: theirs was fed to their own.
    expect(await scalar(`SELECT countMerge(points) FROM metric_catalog_g${first.generation}`)).toBe(POINTS);
    // Its rollups too, bucket for bucket equal to the live ones.
    for (const view of ['points_1m', 'points_1h']) {
      const rebuilt = await rollupOf(`${view}_g${first.generation}`);
      expect(rebuilt.length).toBeGreaterThan(0);
      expect(rebuilt).toEqual(await rollupOf(view));
    }
    // --from: the log re-projected from the middle of each partition, the rows before it copied from the live table.
    const middle = new Map(Object.entries(first.ends).map(([p, e]) => [Number(p), Math.floor(e / 2)]));
    const partial = await rebuildPoints(api.platform, { from: { kind: 'offsets', offsets: middle } });
    expect(partial.copiedRows).toBeGreaterThan(0);
    expect(partial.stats.points).toBe(POINTS - partial.copiedRows);
    expect(partial.verification?.ok).toBe(true);
    expect(await tableChecksums(api.platform.clickhouse, partial.table)).toEqual(live);
    for (const g of [first.generation!, second.generation!, partial.generation!])
      expect((await cli(['replay', 'drop', String(g)])).stdout).toContain(`dropped generation ${g}`);
  });

  it('a rebuild is a background task: GET /api/v1/tasks/{id} follows it from the log', async () => {
    const run = await cli(['replay', 'rebuild', 'points', '--detach', '--json']);
    const { task_id: taskId } = JSON.parse(run.stdout) as { task_id: string };
    const seen = new Set<string>();
    const task = await waitFor(
      'the rebuild task to finish',
      async () => {
        const res = await call(`${api.url}/api/v1/tasks/${taskId}`, admin);
        if (res.status !== 200) return undefined;
        seen.add(res.json.status as string);
        return res.json.status === 'succeeded' || res.json.status === 'failed' ? res.json : undefined;
      },
      300_000,
      50,
    );
    expect(task).toMatchObject({
      task_id: taskId,
      kind: 'points_rebuild',
      status: 'succeeded',
      progress: { rows_done: POINTS, rows_total: POINTS },
      result: { points: POINTS, verified: true, swapped: false, database: settings.CLICKHOUSE_DATABASE, table: expect.stringMatching(/^points_g\d+$/) },
    });
    expect(seen).toContain('running');
    expect((await call(`${api.url}/api/v1/tasks/${taskId}`, analyst)).status).toBe(404);
    expect((await cli(['replay', 'drop', String(task.result.generation)])).stdout).toContain('dropped');
  });

  it('replay verify finds a tampered generation; --swap-if-verified swaps only what verifies; list, swap and drop by hand', async (ctx) => {
    type Rebuilt = { generation: number; verification: { ok: boolean }; swap: { generation: number; retired: number } | null; notSwapped: string | null };
    const built = JSON.parse((await cli(['replay', 'rebuild', 'points', '--json'])).stdout) as Rebuilt;
    const g = built.generation;
    expect(built.verification.ok).toBe(true);
    expect(built.swap).toBeNull();
    expect(JSON.parse((await cli(['replay', 'verify', String(g), '--json'])).stdout)).toMatchObject({ ok: true, mismatched_metrics: 0 });
    expect(JSON.parse((await cli(['replay', 'list', '--json'])).stdout)).toContainEqual(expect.objectContaining({ generation: g, state: 'built' }));
    // One row more in the generation, inside the compared range: verify names its metric.
    await api.platform.clickhouse.command({
      query: `INSERT INTO points_g${g} (metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch) VALUES ('rp.m0', 1, 1, 1, 'tampered', 0, 0, 99999)`,
    });
    const tampered = JSON.parse((await cli(['replay', 'verify', String(g), '--json'])).stdout) as { ok: boolean; mismatches: Array<{ metric_name: string }> };
    expect(tampered.ok).toBe(false);
    expect(tampered.mismatches.map((m) => m.metric_name)).toEqual(['rp.m0']);
    await cli(['replay', 'drop', String(g)]);

    await skipUnlessSwappable(ctx, api.platform);
    // A live table that differs from the log: --swap-if-verified leaves it in place and says why.
    await api.platform.clickhouse.command({
      query: `INSERT INTO points (metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch) VALUES ('rp.m1', 1, 1, 1, 'tampered', 0, 0, 99999)`,
    });
    const refused = JSON.parse((await cli(['replay', 'rebuild', 'points', '--swap-if-verified', '--json'])).stdout) as Rebuilt;
    expect(refused.swap).toBeNull();
    expect(refused.notSwapped).toBe('verification failed');
    expect(await scalar(`SELECT count() FROM points WHERE task_id = 'tampered'`)).toBe(1);
    // Swapping that generation in by hand repairs the live table (and its catalog) from the log.
    expect((await cli(['replay', 'swap', String(refused.generation)])).stdout).toContain(`points is generation ${refused.generation} now`);
    expect(await scalar(`SELECT count() FROM points WHERE task_id = 'tampered'`)).toBe(0);
    expect(await scalar('SELECT count() FROM points')).toBe(POINTS);
    // Now the live table agrees with the log: --swap-if-verified swaps.
    const swapped = JSON.parse((await cli(['replay', 'rebuild', 'points', '--swap-if-verified', '--json'])).stdout) as Rebuilt;
    expect(swapped.verification.ok).toBe(true);
    expect(swapped.swap?.generation).toBe(swapped.generation);
    const generations = JSON.parse((await cli(['replay', 'list', '--json'])).stdout) as Array<{ generation: number; state: string }>;
    expect(generations.filter((x) => x.state === 'live').map((x) => x.generation)).toEqual([swapped.generation]);
    for (const x of generations) if (x.state === 'retired') await cli(['replay', 'drop', String(x.generation)]);
    expect(await downloadDigest({ metrics: 'rp.', pattern: 'starts_with', max_rows: String(POINTS) })).toEqual(before);
  });

  it('drop the live table, rebuild and swap: downloads give byte-identical CSV, the catalog is whole', async (ctx) => {
    await skipUnlessSwappable(ctx, api.platform);
    const catalogBefore = await catalog();
    // Sealed rows of the old generation at the counts the rebuilt one will have, with figures it does not have
    // (a sum of -1): read until the swap, never after it.
    const sealedHours = () => rowsOf<{ n: string }>('SELECT toString(count()) AS n FROM points_1h_sealed WHERE sum_value = -1').then((r) => Number(r[0]!.n));
    await api.platform.clickhouse.command({
      query:
        // At the buckets' marks too: an earlier test's swap marked every metric (no deletion marked these).
        "INSERT INTO points_1h_sealed (metric_name, bucket, rows, points, min_value, max_value, sum_value, last_value, marks) SELECT metric_name, bucket, countMerge(rows) AS n, n, -1, -1, -1, -1, (SELECT sum(n) FROM rollup_mark_counts WHERE metric_name = '') FROM points_1h GROUP BY metric_name, bucket",
    });
    const hoursOf = async () => {
      const res = await call(`${api.url}/api/v1/metrics/download?metrics=rp.m0&resolution=1h&format=json&max_rows=100000`, admin);
      expect(res.status, res.text).toBe(200);
      return res.json as Array<{ sum: number }>;
    };
    expect((await hoursOf()).every((h) => h.sum === -1)).toBe(true);
    expect(await sealedHours()).toBeGreaterThan(0);
    await api.platform.clickhouse.command({ query: 'DROP TABLE points' });
    expect((await downloadDigest({ metrics: 'rp.', pattern: 'starts_with', max_rows: String(POINTS) })).status).toBeGreaterThanOrEqual(500);

    const run = await cli(['replay', 'rebuild', 'points', '--swap']);
    expect(run.stdout).toMatch(/generation \d+ built as points_g\d+: 1,000,000 points|generation \d+ built as points_g\d+/);
    expect(run.stdout).toContain('swapped in: points is generation');
    expect(run.stderr).toMatch(/points\/s/); // the progress line

    const after = await downloadDigest({ metrics: 'rp.', pattern: 'starts_with', max_rows: String(POINTS) });
    expect(after).toEqual(before);
    expect(await catalog()).toEqual(catalogBefore);
    expect(await catalog()).toEqual(await pointsPerMetric());
    expect(await sealedHours()).toBe(0);
    expect((await hoursOf()).some((h) => h.sum === -1)).toBe(false);
  });
});

describe('a rebuild while uploads keep arriving', () => {
  /** Pushes a writer may have unfinished (the freeze holds them all): well under MERIDIAN_MAX_QUEUED_TASKS_PER_USER. */
  const WINDOW = 200;
  it('swaps in without losing or doubling a point; the catalog follows the swap', async (ctx) => {
    await skipUnlessSwappable(ctx, api.platform);
    const uploaded = new Map<string, number>();
    let stop = false;
    let k = 0;
    let afterSwap = -1;
    let failed: unknown = null;
    const ids: string[] = [];
    const writer = (async () => {
      while (!stop) {
        // At most WINDOW pushes unfinished: however slow the machine, the writer stays under the per-user bound of unfinished tasks.
        if (k >= WINDOW) await waitForTask(api.url, admin, ids[k - WINDOW]!, 180_000);
        const base = 10_000_000 + k * 1000;
        const id = await uploadJson(
          `rp.live${k % 3}`,
          Array.from({ length: 400 }, (_, i) => [T0 + (base + i) * 1000, k + i / 1000] as [number, number]),
        );
        uploaded.set(id, 400);
        ids.push(id);
        k++;
      }
    })().catch((e: unknown) => {
      failed = e;
    });
    const writing = (enough: () => boolean) => () => {
      if (failed) throw failed;
      return enough() ? true : undefined;
    };
    await waitFor(
      'some uploads before the rebuild',
      writing(() => uploaded.size >= 5),
      60_000,
      50,
    );

    let frozen: Awaited<ReturnType<typeof downloadDigest>> | null = null;
    let frozenInsert: string | null = null;
    const result = await rebuildPoints(api.platform, {
      swap: 'always',
      whileFrozen: async () => {
        // Live writes are held: downloads still read the (frozen) live rows, inserts are refused,
        // uploads are still accepted, and the live projector keeps retrying meanwhile.
        frozen = await downloadDigest({ metrics: 'rp.m0', max_rows: String(POINTS) });
        frozenInsert = await api.platform.clickhouse.command({ query: "INSERT INTO points (metric_name) VALUES ('x')" }).then(
          () => 'accepted',
          (e: Error) => e.message,
        );
        const during = await uploadJson('rp.frozen', [
          [T0, 1],
          [T0 + 1000, 2],
        ]);
        uploaded.set(during, 2);
        await new Promise((r) => setTimeout(r, 1500));
        expect(await scalar(`SELECT count() FROM points WHERE task_id = '${during}'`)).toBe(0);
      },
    });
    afterSwap = k;
    await waitFor(
      'uploads after the swap',
      writing(() => k >= afterSwap + 5),
      60_000,
      50,
    );
    stop = true;
    await writer;
    expect(failed).toBeNull();

    expect(result.swap).not.toBeNull();
    expect(result.swap!.nudged).toBe(false);
    expect(result.swap!.frozenMs).toBeLessThan(30_000);
    expect(frozen!.status).toBe(200);
    expect(frozen!.lines).toBe(Math.ceil(POINTS / PER_UPLOAD / METRICS) * PER_UPLOAD + 1);
    expect(frozenInsert).toMatch(/not supported by storage Merge/);

    for (const [id, points] of uploaded) {
      const task = await waitForTask(api.url, admin, id, 180_000);
      expect(task.status).toBe('succeeded');
      expect(task.result!.points_accepted).toBe(points);
    }
    const total = POINTS + [...uploaded.values()].reduce((a, b) => a + b, 0);
    expect(await scalar('SELECT count() FROM points')).toBe(total);
    expect(await scalar('SELECT uniqExact(kafka_partition, kafka_offset, row_in_batch) FROM points')).toBe(total);
    const perTask = await rowsOf<{ task_id: string; n: string }>(
      "SELECT task_id, toString(count()) AS n FROM points WHERE metric_name LIKE 'rp.live%' OR metric_name = 'rp.frozen' GROUP BY task_id",
    );
    expect(perTask).toHaveLength(uploaded.size);
    for (const row of perTask) expect(Number(row.n), row.task_id).toBe(uploaded.get(row.task_id));
    // The catalog view feeds on `points` by name: after the swap it is the new generation's catalog, kept current.
    expect(await catalog()).toEqual(await pointsPerMetric());
    // The rollups moved with it, and count every point of the swapped-in table, the ones uploaded during the swap included.
    const perMetric = (await pointsPerMetric()).map(({ metric_name, points }) => ({ metric_name, points }));
    for (const view of ['points_1m', 'points_1h']) expect(await rollupCounts(view), view).toEqual(perMetric);
    const listing = await listGenerations(api.platform.clickhouse);
    expect(listing.find((g) => g.generation === result.generation)).toMatchObject({ state: 'live', table: 'points', rows: total });
    expect(listing.find((g) => g.generation === result.swap!.retired)).toMatchObject({ state: 'retired', table: `points_g${result.swap!.retired}` });
    const listed = (await cli(['replay', 'list'])).stdout;
    expect(listed).toMatch(new RegExp(`g${result.generation}\\s+live\\s+points\\s`));
    expect(await cli(['replay', 'drop', String(result.generation)]).catch((e: Error) => e.message)).toMatch(/is live/);
    expect((await cli(['replay', 'drop', String(result.swap!.retired)])).stdout).toContain(`points_g${result.swap!.retired}`);
    // The live projector's group is the one the swap would nudge.
    expect(projectorGroupId(settings.MERIDIAN_TOPIC_PREFIX)).toBe(`${settings.MERIDIAN_TOPIC_PREFIX}ingest-projector`);
  });
});

describe('replay into a separate database up to a point in time', () => {
  it('holds exactly the uploads sealed by then; the live tables are untouched', async () => {
    await new Promise((r) => setTimeout(r, 50));
    const cut = Date.now();
    await new Promise((r) => setTimeout(r, 50));
    const late = await uploadJson('rp.late', [
      [T0, 1],
      [T0 + 1000, 2],
      [T0 + 2000, 3],
    ]);
    expect((await waitForTask(api.url, admin, late, 120_000)).status).toBe('succeeded');
    const live = await scalar('SELECT count() FROM points');
    const liveGenerations = await listGenerations(api.platform.clickhouse);
    const db = `${settings.CLICKHOUSE_DATABASE}_asof`;
    try {
      const run = await cli(['replay', 'rebuild', 'points', '--to', new Date(cut).toISOString(), '--database', db]);
      expect(run.stdout).toContain(`rebuilt ${db}.points`);
      expect(await scalar(`SELECT count() FROM ${db}.points`)).toBe(live - 3);
      expect(await scalar(`SELECT count() FROM ${db}.points WHERE metric_name = 'rp.late'`)).toBe(0);
      expect(await scalar(`SELECT count() FROM points WHERE metric_name = 'rp.late'`)).toBe(3);
      // Its catalog was kept by its own view, from the same migrations.
      expect(await scalar(`SELECT countMerge(points) FROM ${db}.metric_catalog`)).toBe(live - 3);
      // Same rows as the live ones up to then.
      const sums = (table: string) =>
        rowsOf<{ s: string }>(
          `SELECT toString(sum(cityHash64(metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch))) AS s FROM ${table} WHERE metric_name != 'rp.late'`,
        );
      expect(await sums(`${db}.points`)).toEqual(await sums('points'));
      expect(await scalar('SELECT count() FROM points')).toBe(live);
      expect(await listGenerations(api.platform.clickhouse)).toEqual(liveGenerations);
    } finally {
      await api.platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${db}` });
    }
  });
});

describe('a point in time that falls inside an upload', () => {
  it('deleting the upload cut in two leaves the catalog exact (count/min/max of the points), in a generation and in a database', async () => {
    // A cut after one of an upload's batches and before its seal: the rebuild projects the
    // batch, finds the upload unsealed and deletes it again; its catalog must forget it too.
    // An upload that fits one produce request sends its batches and seals together (one
    // timestamp, no cut between them): three batches of one partition take at least two, of
    // values that PointBatch v5 cannot write as decimals (8 bytes each: 400 KB a batch, where
    // quarters take a byte and three batches fit one request).
    const cut = await uploadFile('rp.cut', 0, 150_000, (i) => i / 7);
    expect((await waitForTask(api.url, admin, cut, 300_000)).status).toBe('succeeded');
    const points = (await everyEvent()).filter((e) => e.topic === 'points');
    const firstBatch = new Map<string, number>();
    const lastSeal = new Map<string, number>();
    for (const e of points) {
      const task = e.event.task_id as string;
      if (e.type === 'PointBatch') firstBatch.set(task, Math.min(firstBatch.get(task) ?? Infinity, e.timestamp));
      if (e.type === 'UploadSealed') lastSeal.set(task, Math.max(lastSeal.get(task) ?? -Infinity, e.timestamp));
    }
    const straddled = [...firstBatch].find(([task, ts]) => ts < (lastSeal.get(task) ?? -Infinity));
    expect(straddled, 'an upload whose first batch was written before its last seal').toBeDefined();
    const to = { kind: 'time', ms: straddled![1] } as const;
    const perMetric = (table: string) =>
      rowsOf<Record<string, string>>(
        `SELECT metric_name, toString(count()) AS points, toString(min(ts)) AS first_ts, toString(max(ts)) AS last_ts FROM ${table} GROUP BY metric_name ORDER BY metric_name`,
      );
    const catalogOf = (table: string) =>
      rowsOf<Record<string, string>>(
        `SELECT metric_name, toString(countMerge(points)) AS points, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM ${table} GROUP BY metric_name ORDER BY metric_name`,
      );

    const generation = await rebuildPoints(api.platform, { to });
    let kept: Record<string, string>[];
    try {
      expect(generation.stats.unsealedBatches).toBeGreaterThan(0);
      expect(await scalar(`SELECT count() FROM points_g${generation.generation} WHERE task_id = '${straddled![0]}'`)).toBe(0);
      kept = await perMetric(`points_g${generation.generation}`);
      expect(await catalogOf(`metric_catalog_g${generation.generation}`)).toEqual(kept);
    } finally {
      await dropGeneration(api.platform.clickhouse, generation.generation!);
    }

    const db = `${settings.CLICKHOUSE_DATABASE}_cut`;
    try {
      const copy = await rebuildPoints(api.platform, { to, database: db });
      expect(copy.stats.unsealedBatches).toBe(generation.stats.unsealedBatches);
      expect(await catalogOf(`${db}.metric_catalog`)).toEqual(await perMetric(`${db}.points`));
      expect(await perMetric(`${db}.points`)).toEqual(kept);
    } finally {
      await api.platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${db}` });
    }
  });
});

/** Every event of the run's topics, read with a plain consumer (independent of the export's reader). */
async function everyEvent(): Promise<LoggedEvent[]> {
  const codec = createEventCodec<EventLike>();
  const registry = SchemaRegistry.loadFromDirectory();
  const out: LoggedEvent[] = [];
  const { kafka, topics } = api.platform;
  for (const short of ['accounts', 'tasks', 'files', 'points'] as const) {
    const { end } = await api.platform.log.offsets(topics[short]);
    const remaining = new Map([...end].filter(([, e]) => e > 0));
    const got: LoggedEvent[] = [];
    if (remaining.size > 0) {
      const consumer = kafka.consumer({
        groupId: `${settings.MERIDIAN_TOPIC_PREFIX}check-${short}-${Date.now()}`,
        readUncommitted: false,
        maxWaitTimeInMs: 100,
      });
      await consumer.connect();
      await consumer.subscribe({ topic: topics[short], fromBeginning: true });
      const done = new Promise<void>((resolve) => {
        void consumer.run({
          eachBatch: async ({ batch }) => {
            for (const m of batch.messages) {
              const offset = Number(m.offset);
              if (offset >= end.get(batch.partition)!) continue;
              const header = parseHeader(m.value!);
              const writer = header && registry.byPrint(header.fingerprint);
              if (writer) {
                const { type, ...event } = codec.decode(m.value!) as EventLike & Record<string, unknown>;
                got.push({
                  topic: short,
                  partition: batch.partition,
                  offset,
                  timestamp: Number(m.timestamp),
                  key: m.key ? m.key.toString() : null,
                  type,
                  schema_version: writer.version,
                  event,
                });
              }
            }
            if (Number(batch.lastOffset()) + 1 >= end.get(batch.partition)!) remaining.delete(batch.partition);
            if (remaining.size === 0) resolve();
          },
        });
      });
      consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
        if (Number(e.payload.lastOffset) + 1 >= (end.get(e.payload.partition) ?? 0)) remaining.delete(e.payload.partition);
      });
      await waitFor(`every ${short} event`, async () => (remaining.size === 0 ? true : undefined), 60_000, 100);
      await Promise.race([done, Promise.resolve()]);
      await consumer.disconnect();
    }
    out.push(...got.sort((a, b) => a.partition - b.partition || a.offset - b.offset));
  }
  return out;
}

function decodeAvroFile(bytes: Buffer): Promise<{ schema: unknown; records: LoggedEvent[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'replay-'));
  const path = join(dir, 'events.avro');
  writeFileSync(path, bytes);
  return new Promise((resolve, reject) => {
    const records: LoggedEvent[] = [];
    let schema: unknown = null;
    avro
      .createFileDecoder(path)
      .on('metadata', (type: avro.Type) => {
        schema = type.schema();
      })
      .on('data', (r: LoggedEvent & { event: Record<string, unknown> }) => {
        const keys = Object.keys(r.event);
        const event = keys.length === 1 && keys[0]!.startsWith('meridian.') ? (r.event[keys[0]!] as Record<string, unknown>) : r.event;
        records.push({ ...r, event: { ...event } });
      })
      .on('end', () => {
        rmSync(dir, { recursive: true, force: true });
        resolve({ schema, records });
      })
      .on('error', reject);
  });
}

/** Avro decodes records as class instances and JSON numbers; compare plain data. */
const plain = (events: readonly LoggedEvent[]) => JSON.parse(JSON.stringify(events)) as unknown;

/**
 * An Avro file's events as the log's decoder gives them: the file writes each event with its
 * newest schema, so a PointBatch carries v4's timestamps_delta, always false, and v5's columns,
 * always empty (a file holds the timestamps and values themselves), which the decoder leaves out.
 */
function asDecoded(records: readonly LoggedEvent[]): LoggedEvent[] {
  return records.map((r) => {
    if (r.type !== 'PointBatch') return r;
    const { timestamps_delta: flag, columns, ...event } = r.event as typeof r.event & { columns: Uint8Array };
    expect(flag).toBe(false);
    expect(columns.length).toBe(0);
    return { ...r, event };
  });
}

describe('exporting the event history', () => {
  let from: number;
  let to: number;
  let inRange: LoggedEvent[];

  beforeAll(async () => {
    await new Promise((r) => setTimeout(r, 50));
    from = Date.now();
    await new Promise((r) => setTimeout(r, 50));
    const id = await uploadJson('rp.export', [
      [T0, 1.5],
      [T0 + 1000, -2],
    ]);
    expect((await waitForTask(api.url, admin, id, 120_000)).status).toBe('succeeded');
    // A file too, so that the range holds a worker's run (its command, start and outcome) beside a push.
    const file = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=rp.export.file`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${admin}` },
      body: `${formatTimestamp(T0)},3\n`,
    });
    expect(file.status).toBe(202);
    expect((await waitForTask(api.url, admin, ((await file.json()) as { task_id: string }).task_id, 120_000)).status).toBe('succeeded');
    await createUser(api.url, admin, 'exported', [{ match: 'exact', value: 'rp.export', access: 'r' }]);
    await new Promise((r) => setTimeout(r, 50));
    to = Date.now();
    await new Promise((r) => setTimeout(r, 50));
    const outside = await uploadJson('rp.export', [[T0 + 2000, 7]]);
    expect((await waitForTask(api.url, admin, outside, 120_000)).status).toBe('succeeded');
    inRange = (await everyEvent()).filter((e) => e.timestamp >= from && e.timestamp <= to);
    const types = new Set(inRange.map((e) => e.type));
    for (const t of [
      'MetricsPushed',
      'MetricsUploadRequested',
      'TaskStarted',
      'UploadParsed',
      'UploadSegmentProjected',
      'PointBatch',
      'UploadSealed',
      'UserCreated',
      'MetricEntitlementGranted',
    ])
      expect(types, t).toContain(t);
  });

  const url = (qs: Record<string, string>) => `${api.url}/api/v1/events?${new URLSearchParams(qs)}`;
  const iso = (ms: number) => new Date(ms).toISOString();

  it("the Avro file of a range decodes with avsc's file decoder to exactly the events of that range", async () => {
    const res = await fetch(url({ from: iso(from), to: iso(to) }), { headers: { Authorization: `Bearer ${admin}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/avro');
    expect(res.headers.get('x-next-cursor')).toBeNull();
    const { schema, records } = await decodeAvroFile(Buffer.from(await res.arrayBuffer()));
    expect((schema as { name: string }).name).toBe('meridian.export.LoggedEvent');
    expect(plain(asDecoded(records))).toEqual(plain(inRange));
    const head = await fetch(url({ from: iso(from), to: iso(to) }), { method: 'HEAD', headers: { Authorization: `Bearer ${admin}` } });
    expect([head.status, head.headers.get('content-type'), head.headers.get('content-disposition')]).toEqual([
      200,
      'application/avro',
      res.headers.get('content-disposition'),
    ]);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    const batches = records.filter((r) => r.type === 'PointBatch').map((r) => r.event);
    expect(batches).toContainEqual(expect.objectContaining({ metric_name: 'rp.export', timestamps: [T0, T0 + 1000], values: [1.5, -2] }));
  });

  it('types filter the events; NDJSON carries the same ones; pages follow the cursor', async () => {
    const types = 'PointBatch,UserCreated';
    const wanted = inRange.filter((e) => types.split(',').includes(e.type));
    const one = await fetch(url({ from: iso(from), to: iso(to), types, format: 'ndjson' }), { headers: { Authorization: `Bearer ${admin}` } });
    expect(one.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = (await one.text())
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as LoggedEvent & { timestamp: string });
    expect(lines.map((l) => [l.topic, l.partition, l.offset, l.type, l.timestamp])).toEqual(
      wanted.map((e) => [e.topic, e.partition, e.offset, e.type, iso(e.timestamp)]),
    );
    expect(lines.find((l) => l.type === 'UserCreated')!.event).toMatchObject({ user_name: 'exported', secret_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });

    // Pages of at most 2 offsets, followed through X-Next-Cursor / Link, add up to the whole range.
    const paged: LoggedEvent[] = [];
    let next: string | null = url({ from: iso(from), to: iso(to), max_events: '2', format: 'ndjson' });
    let pages = 0;
    while (next) {
      const res: Response = await fetch(next, { headers: { Authorization: `Bearer ${admin}` } });
      expect(res.status).toBe(200);
      const text = await res.text();
      for (const l of text.split('\n').filter(Boolean)) paged.push(JSON.parse(l) as LoggedEvent);
      const link = res.headers.get('link');
      const cursor = res.headers.get('x-next-cursor');
      if (cursor) expect(decodeExportCursor(cursor)).toBeNull(); // sealed: the log offsets are not readable
      next = link ? `${api.url}${/^<([^>]+)>/.exec(link)![1]}` : null;
      pages++;
    }
    expect(pages).toBeGreaterThan(3);
    // A cursor is bound to its range (and user): on another range it is a 400 problem.
    const first = (await call(url({ from: iso(from), to: iso(to), max_events: '2', format: 'ndjson' }), admin)).headers.get('x-next-cursor')!;
    const elsewhere = await call(url({ from: iso(from), to: iso(to - 1), max_events: '2', format: 'ndjson', cursor: first }), admin);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.json.errors[0].field).toBe('cursor');
    expect(paged.map((e) => `${e.topic}/${e.partition}/${e.offset}`)).toEqual(inRange.map((e) => `${e.topic}/${e.partition}/${e.offset}`));
  });

  it('the CLI exports the same file; non-admins get a 404 problem; bad parameters a 400', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-cli-'));
    try {
      const file = join(dir, 'range.avro');
      const run = await cli(['events', 'export', '--from', iso(from), '--to', iso(to), '--out', file]);
      expect(run.stdout).toMatch(/exported [\d,]+ bytes of avro/);
      const { records } = await decodeAvroFile(readFileSync(file));
      expect(plain(asDecoded(records))).toEqual(plain(inRange));
      const nd = await cli(['events', 'export', '--from', iso(from), '--to', iso(to), '--types', 'UserCreated', '--format', 'ndjson']);
      expect(
        nd.stdout
          .trimEnd()
          .split('\n')
          .map((l) => (JSON.parse(l) as LoggedEvent).event.user_name),
      ).toEqual(['exported']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const denied = await call(url({}), analyst);
    expect(denied.status).toBe(404);
    expect(denied.headers.get('content-type')).toMatch(/problem\+json/);
    expect(denied.json.detail).toBe((await call(`${api.url}/api/v1/nothing-here`, analyst)).json.detail.replace('/api/v1/nothing-here', '/api/v1/events'));
    for (const [qs, field] of [
      [{ from: 'yesterday' }, 'from'],
      [{ types: 'NoSuchEvent' }, 'types'],
      [{ max_events: '0' }, 'max_events'],
      [{ cursor: 'x!' }, 'cursor'],
      [{ format: 'xml' }, 'format'],
    ] as const) {
      const res = await call(url(qs), admin);
      expect(res.status, JSON.stringify(qs)).toBe(400);
      expect(JSON.stringify(res.json.errors), JSON.stringify(qs)).toContain(field);
    }
  });
});

describe('recorded events of older schema versions, on a log of their own', () => {
  const own = isolatedSettings();
  let platform: Platform;
  let worker: Awaited<ReturnType<typeof startWorker>> | null = null;
  const fixtureDir = new URL('../fixtures/events/', import.meta.url).pathname;
  const fixture = (name: string) => JSON.parse(readFileSync(join(fixtureDir, name, 'v1.json'), 'utf8')) as EventFixture;
  // A newer PointBatch (test only: schemas/ is untouched), so that the recorded v1 bytes are an older version.
  const nextType = avro.Type.forSchema(JSON.parse(readFileSync(join(fixtureDir, 'next-schemas/PointBatch/v6.avsc'), 'utf8')) as avro.Schema);
  const live = SchemaRegistry.loadFromDirectory();
  const withNext = new SchemaRegistry([
    ...live.names().flatMap((n) => live.versionsOf(n)),
    { name: 'PointBatch', version: 6, type: nextType, fingerprint: fingerprintOf(nextType) },
  ]);
  const nextCodec = createEventCodec<PointsFact>(withNext);
  const pointsCodec = createEventCodec<PointsFact>();
  const count = async (table = 'points') =>
    Number(
      (await (await platform.clickhouse.query({ query: `SELECT toString(count()) AS n FROM ${table}`, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n,
    );

  /**
   * Writes messages to partition 0 of the points topic in one transaction, as the upload handler
   * does, and returns their first offset once they are stable: a commit is answered before its
   * markers are written, so the log's last stable offset read at once may still end before them.
   */
  async function write(values: Buffer[], key = 'fixture'): Promise<number> {
    const producer = createProducer(platform.kafka, { transactionalId: `${own.MERIDIAN_TOPIC_PREFIX}fixture-${Date.now()}` });
    await producer.connect();
    let base: number;
    try {
      const tx = await producer.transaction();
      const [meta] = await tx.send({ topic: platform.topics.points, acks: -1, messages: values.map((value) => ({ partition: 0, key, value })) });
      await tx.commit();
      base = Number(meta!.baseOffset);
    } finally {
      await producer.disconnect();
    }
    const stable = async () => ((await platform.log.offsets(platform.topics.points)).end.get(0)! > base + values.length - 1 ? true : undefined);
    await waitFor('the written records to be stable', stable, 10_000, 20);
    return base;
  }
  const sealed = (task: string, points: number) => pointsCodec.encode({ type: 'UploadSealed', task_id: task, points });

  beforeAll(async () => {
    platform = createPlatform(own, createLogger({ name: 'fixtures', level: own.LOG_LEVEL }), 'fixtures');
    await platform.prepare();
  });
  afterAll(async () => {
    await worker?.close();
    await platform?.close();
  });

  it('a v1 PointBatch and a v6 one rebuild to the expected rows through the same code', async () => {
    const v1 = fixture('PointBatch');
    const value = fromFixtureJson(v1.value) as { task_id: string; metric_name: string; updated_at: number; timestamps: number[]; values: number[] };
    const nextBytes = nextCodec.encode({
      type: 'PointBatch',
      task_id: 'task-v6',
      metric_name: 'fixture.v6',
      updated_at: 1_704_067_300_000,
      timestamps: [1_704_067_301_000],
      values: [-3.5],
      source_row: 12,
    } as unknown as PointsFact);
    expect(parseHeader(nextBytes)!.fingerprint).toBe(fingerprintOf(nextType));
    const first = await write([Buffer.from(v1.bytes, 'base64'), Buffer.from(fixture('UploadSealed').bytes, 'base64'), nextBytes, sealed('task-v6', 1)]);

    await platform.clickhouse.command({ query: 'CREATE TABLE points_fixtures AS points' });
    const { end, low } = await platform.log.offsets(platform.topics.points);
    const stats = await rebuildRange({
      log: platform.log,
      topic: platform.topics.points,
      groupPrefix: own.MERIDIAN_TOPIC_PREFIX,
      clickhouse: platform.clickhouse,
      table: 'points_fixtures',
      starts: low,
      ends: end,
      batchRows: 1000,
      codec: nextCodec,
    });
    expect(stats).toMatchObject({ batches: 2, points: 3, seals: 2, rejected: 0, undecodable: 0 });
    const rows = await (
      await platform.clickhouse.query({
        query:
          'SELECT metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch FROM points_fixtures ORDER BY kafka_offset, row_in_batch',
        format: 'JSONEachRow',
      })
    ).json<Record<string, unknown>>();
    expect(rows.map((r) => ({ ...r, ts: Number(r.ts), updated_at: Number(r.updated_at), kafka_offset: Number(r.kafka_offset) }))).toEqual([
      ...value.timestamps.map((ts, i) => ({
        metric_name: value.metric_name,
        ts,
        value: value.values[i],
        updated_at: value.updated_at,
        task_id: value.task_id,
        kafka_partition: 0,
        kafka_offset: first,
        row_in_batch: i,
      })),
      {
        metric_name: 'fixture.v6',
        ts: 1_704_067_301_000,
        value: -3.5,
        updated_at: 1_704_067_300_000,
        task_id: 'task-v6',
        kafka_partition: 0,
        kafka_offset: first + 2,
        row_in_batch: 0,
      },
    ]);
    // The live schemas read v1 the same way (no v6 there): the live projector and a plain rebuild agree.
    await platform.clickhouse.command({ query: 'CREATE TABLE points_fixtures_live AS points' });
    const v1Only = await rebuildRange({
      log: platform.log,
      topic: platform.topics.points,
      groupPrefix: own.MERIDIAN_TOPIC_PREFIX,
      clickhouse: platform.clickhouse,
      table: 'points_fixtures_live',
      starts: low,
      ends: new Map([...end].map(([p, e]) => [p, p === 0 ? first + 2 : e])),
      batchRows: 1000,
    });
    expect(v1Only.points).toBe(2);
    expect(await tableChecksums(platform.clickhouse, 'points_fixtures_live')).toEqual(
      new Map([...(await tableChecksums(platform.clickhouse, 'points_fixtures'))].filter(([m]) => m !== 'fixture.v6')),
    );
  });

  it('a swap when the new generation is ahead of a live projector holding rows in memory: no row lost or doubled', async (ctx) => {
    await skipUnlessSwappable(ctx, platform);
    worker = await startWorker(own);
    // Only v1 events on the live log from here on (the live projector reads schemas/, which has no v6).
    await waitFor('the live projector to catch up', async () => ((await count()) === 2 ? true : undefined), 60_000, 100);
    const batch = (task: string, n: number, at: number) =>
      pointsCodec.encode({
        type: 'PointBatch',
        task_id: task,
        metric_name: 'fixture.live',
        updated_at: at,
        timestamps: Array.from({ length: n }, (_, i) => at + i),
        values: Array.from({ length: n }, (_, i) => i),
      });
    await write([batch('task-a', 5, 1_704_067_400_000), sealed('task-a', 5)]);
    await waitFor('task-a live', async () => ((await count()) === 7 ? true : undefined), 60_000, 100);
    // A batch without its seal: the live projector buffers it and waits for more (it is in its memory, not in ClickHouse).
    await write([batch('task-b', 4, 1_704_067_500_000)]);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count()).toBe(7);

    const result = await rebuildPoints(platform, { swap: 'always', waitForLiveMs: 1000 });
    // The v1 fixture, task-a and task-b; with the live schemas (no v6) the v6 batch is undecodable and skipped, as live.
    expect(result.stats).toMatchObject({ points: 2 + 5 + 4, undecodable: 1 });
    expect(result.swap!.nudged).toBe(true);
    expect(await count()).toBe(11);

    // The live projector re-read its position from the new table: task-b is not written twice, and it goes on.
    await write([batch('task-c', 3, 1_704_067_600_000), sealed('task-c', 3)]);
    await waitFor('task-c live', async () => ((await count()) === 14 ? true : undefined), 60_000, 100);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count()).toBe(14);
    expect(
      Number(
        (
          await (
            await platform.clickhouse.query({
              query: 'SELECT toString(uniqExact(kafka_partition, kafka_offset, row_in_batch)) AS n FROM points',
              format: 'JSONEachRow',
            })
          ).json<{ n: string }>()
        )[0]!.n,
      ),
    ).toBe(14);
  });
});

/**
 * Staged uploads on a log of their own, written by hand as their job writes
 * them (test/support/staged-log.ts) and sealed by a live worker's projector: a staged share's
 * rows enter `points` only at its seal. A rebuild must defer them the same way, or its table
 * differs from live and a swap doubles them (the live projector would attach a share the
 * generation holds already).
 */
describe('staged uploads, rebuilt as the live projector seals them', () => {
  const own = isolatedSettings();
  let platform: Platform;
  let worker: Awaited<ReturnType<typeof startWorker>> | null = null;
  const T = Date.UTC(2024, 5, 1);
  const rows = async <R>(sql: string): Promise<R[]> => (await platform.clickhouse.query({ query: sql, format: 'JSONEachRow' })).json<R>();
  const count = async (sql: string): Promise<number> => Number((await rows<{ n: string }>(`SELECT toString((${sql})) AS n`))[0]!.n);
  const write = (upload: HandUpload) => writeUpload(platform.kafka, platform.topics.points, own.MERIDIAN_TOPIC_PREFIX, upload);
  const catalogOf = (table: string) =>
    rows(
      `SELECT metric_name, toString(countMerge(points)) AS points, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM ${table} GROUP BY metric_name ORDER BY metric_name`,
    );
  const perMetric = (table: string) =>
    rows(
      `SELECT metric_name, toString(count()) AS points, toString(min(ts)) AS first_ts, toString(max(ts)) AS last_ts FROM ${table} GROUP BY metric_name ORDER BY metric_name`,
    );
  const sealsOf = (table: string) =>
    rows(`SELECT kafka_partition, toString(seal_offset) AS seal_offset, task_id, attempt FROM ${table} ORDER BY kafka_partition, seal_offset`);
  const stagesIn = (database: string) => count(`SELECT count() FROM system.tables WHERE database = '${database}' AND match(name, '_stage_')`);
  const pointsOf = (table: string, task: string) => count(`SELECT count() FROM ${table} WHERE task_id = '${task}'`);
  const batch = (partition: number, metric: string, first: number, n: number): HandBatch => ({
    partition,
    metric,
    points: Array.from({ length: n }, (_, i) => [T + (first + i) * 1000, first + i / 8] as const),
  });
  let total = 0;
  const waitForLive = (what: string) => waitFor(what, async () => ((await count('SELECT count() FROM points')) === total ? true : undefined), 60_000, 100);
  /** A restarted worker's live projector reaches `total` from the new table's positions, and stays there: each point once, the catalog exact. */
  async function restartedWorkerSeals(what: string): Promise<void> {
    worker = await startWorker(own);
    await waitForLive(what);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await count('SELECT count() FROM points')).toBe(total);
    expect(await count('SELECT uniqExact(kafka_partition, kafka_offset, row_in_batch) FROM points')).toBe(total);
    expect(await catalogOf('metric_catalog')).toEqual(await perMetric('points'));
  }

  beforeAll(async () => {
    platform = createPlatform(own, createLogger({ name: 'staged-replay', level: own.LOG_LEVEL }), 'staged-replay');
    await platform.prepare();
    worker = await startWorker(own);
  });
  afterAll(async () => {
    await worker?.close();
    await platform?.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${own.CLICKHOUSE_DATABASE}` });
    await platform?.close();
  });

  it('a rebuild of a log with staged uploads equals live: the same rows, catalog and seals, each share once, no stage left', async () => {
    const direct = await write({ batches: [batch(0, 'st.a', 0, 3), batch(1, 'st.b', 0, 2)] });
    let inside: WrittenUpload | null = null;
    // A staged upload over three partitions, another upload's batch committed inside its range.
    const staged = await write({
      staged: true,
      batches: [batch(0, 'st.a', 10, 4), batch(1, 'st.c', 10, 3), batch(0, 'st.d', 10, 1), batch(2, 'st.a', 20, 2)],
      between: async () => {
        inside = await write({ batches: [batch(0, 'st.a', 50, 2)] });
      },
    });
    const second = await write({ staged: true, batches: [batch(1, 'st.e', 0, 5)] });
    total = direct.points + inside!.points + staged.points + second.points;
    await waitForLive('the live projector to seal every upload');
    await waitFor('4 staged seals recorded', async () => ((await count('SELECT count() FROM points_seals')) === 4 ? true : undefined), 30_000, 100);

    const result = await rebuildPoints(platform, { swap: 'never' });
    const g = result.generation!;
    expect(result.stats).toMatchObject({ stagedBatches: 5, stagedSeals: 4, points: total, rejected: 0 });
    expect(result.verification).toMatchObject({ ok: true, rows_expected: total, rows_actual: total });
    expect(await tableChecksums(platform.clickhouse, `points_g${g}`)).toEqual(await tableChecksums(platform.clickhouse, 'points'));
    expect(await count(`SELECT uniqExact(kafka_partition, kafka_offset, row_in_batch) FROM points_g${g}`)).toBe(total);
    expect(await catalogOf(`metric_catalog_g${g}`)).toEqual(await catalogOf('metric_catalog'));
    expect(await catalogOf(`metric_catalog_g${g}`)).toEqual(await perMetric('points'));
    expect(await sealsOf(`points_seals_g${g}`)).toEqual(await sealsOf('points_seals'));
    expect(await stagesIn(own.CLICKHOUSE_DATABASE)).toBe(0);

    // Rebuilt again from where it is (a resumed rebuild): its positions count the seals, so nothing is sealed twice.
    const { low, end } = await platform.log.offsets(platform.topics.points);
    const again = await rebuildRange({
      log: platform.log,
      topic: platform.topics.points,
      groupPrefix: own.MERIDIAN_TOPIC_PREFIX,
      clickhouse: platform.clickhouse,
      table: `points_g${g}`,
      seals: `points_seals_g${g}`,
      catalog: `metric_catalog_g${g}`,
      starts: low,
      ends: end,
      batchRows: 1000,
    });
    expect(again).toMatchObject({ events: 0, stagedSeals: 0 });
    expect(await count(`SELECT count() FROM points_g${g}`)).toBe(total);

    // A rebuild that died between a share's ATTACH and its seal's record (partition 0's seal row
    // gone): resumed, it reads the seal again, finds the share attached and only records it.
    await platform.clickhouse.command({ query: `ALTER TABLE points_seals_g${g} DELETE WHERE kafka_partition = 0` });
    await waitFor(
      'the seal row deleted',
      async () => ((await count(`SELECT count() FROM points_seals_g${g} WHERE kafka_partition = 0`)) === 0 ? true : undefined),
      30_000,
      100,
    );
    const resumed = await rebuildRange({
      log: platform.log,
      topic: platform.topics.points,
      groupPrefix: own.MERIDIAN_TOPIC_PREFIX,
      clickhouse: platform.clickhouse,
      table: `points_g${g}`,
      seals: `points_seals_g${g}`,
      catalog: `metric_catalog_g${g}`,
      starts: low,
      ends: end,
      batchRows: 1000,
    });
    expect(resumed).toMatchObject({ stagedSeals: 1, batches: 0 });
    expect(await tableChecksums(platform.clickhouse, `points_g${g}`)).toEqual(await tableChecksums(platform.clickhouse, 'points'));
    expect(await catalogOf(`metric_catalog_g${g}`)).toEqual(await catalogOf('metric_catalog'));
    expect(await sealsOf(`points_seals_g${g}`)).toEqual(await sealsOf('points_seals'));
    expect(await stagesIn(own.CLICKHOUSE_DATABASE)).toBe(0);

    expect(await dropGeneration(platform.clickhouse, g)).toEqual(expect.arrayContaining([`points_g${g}`, `points_seals_g${g}`, `metric_catalog_g${g}`]));

    // --from inside a staged share: the rows before it (part of the share, attached live) are
    // copied from live, and its seal attaches only the batches the generation lacks.
    const middle = new Map([...low].map(([p, o]) => [p, p === 0 ? staged.offsets[2]! : o]));
    const partial = await rebuildPoints(platform, { from: { kind: 'offsets', offsets: middle } });
    const h = partial.generation!;
    expect(partial.copiedRows).toBeGreaterThan(0);
    expect(partial.stats).toMatchObject({ stagedSeals: 4 });
    // The points it reports are the ones it wrote: the share's rows copied from live are not counted again.
    expect(partial.stats.points).toBe(total - partial.copiedRows);
    expect(partial.verification).toMatchObject({ ok: true, rows_actual: total });
    expect(await tableChecksums(platform.clickhouse, `points_g${h}`)).toEqual(await tableChecksums(platform.clickhouse, 'points'));
    expect(await catalogOf(`metric_catalog_g${h}`)).toEqual(await catalogOf('metric_catalog'));
    expect(await sealsOf(`points_seals_g${h}`)).toEqual(await sealsOf('points_seals'));
    expect(await stagesIn(own.CLICKHOUSE_DATABASE)).toBe(0);
    await dropGeneration(platform.clickhouse, h);
  });

  it('a swap with a staged seal pending doubles nothing: the live projector seals it into the new generation', async (ctx) => {
    await skipUnlessSwappable(ctx, platform);
    await worker?.close();
    worker = null;
    const topic = platform.topics.points;
    let inside: WrittenUpload | null = null;
    const pending = await write({
      staged: true,
      batches: [batch(0, 'st.f', 0, 3), batch(1, 'st.f', 10, 2)],
      between: async () => {
        inside = await write({ batches: [batch(0, 'st.g', 0, 2)] });
      },
    });
    // The live projector, stopped past the direct upload inside the staged one's range and before
    // its seals (played by the projector's own pieces: rebuildRange into points with its seals).
    const { low, end } = await platform.log.offsets(topic);
    const stopped = new Map([...end].map(([p, e]) => [p, pending.seals.get(p) ?? e]));
    await rebuildRange({
      log: platform.log,
      topic,
      groupPrefix: own.MERIDIAN_TOPIC_PREFIX,
      clickhouse: platform.clickhouse,
      table: 'points',
      seals: 'points_seals',
      catalog: 'metric_catalog',
      starts: low,
      ends: stopped,
      batchRows: 1000,
    });
    total += inside!.points;
    expect(await count('SELECT count() FROM points')).toBe(total);
    expect(await pointsOf('points', pending.taskId)).toBe(0);

    // A generation built to where live is, swapped in: the staged batches below live's position are not in it either.
    const sealsBefore = await count('SELECT count() FROM points_seals');
    let frozen: { seals: number; refused: boolean } | null = null;
    const result = await rebuildPoints(platform, {
      to: { kind: 'offsets', offsets: new Map([...stopped].map(([p, e]) => [p, e - 1])) },
      swap: 'always',
      waitForLiveMs: 0,
      // While frozen, the seals stay readable and no seal can be recorded (its ATTACH is held too).
      whileFrozen: async () => {
        const refused = await platform.clickhouse
          .insert({
            table: 'points_seals',
            format: 'JSONEachRow',
            values: [{ kafka_partition: 0, seal_offset: 1e9, task_id: 'frozen', attempt: '0000000000000000' }],
          })
          .then(
            () => false,
            () => true,
          );
        frozen = { seals: await count('SELECT count() FROM points_seals'), refused };
      },
    });
    expect(frozen).toEqual({ seals: sealsBefore, refused: true });
    expect(result.swap).toMatchObject({ nudged: false, retired: 1 });
    // The first test's staged batches and this upload's two are passed over; only the first test's shares are sealed.
    expect(result.stats).toMatchObject({ stagedBatches: 5 + 2, stagedSeals: 4 });
    expect(await pointsOf('points', pending.taskId)).toBe(0);
    const tables = await rows<{ name: string; engine: string }>(
      "SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND name LIKE 'points%' ORDER BY name",
    );
    // The generation's rollups moved in with it (18.16 keeps a view's rows in its inner table).
    expect(tables).toEqual([
      { name: 'points', engine: 'MergeTree' },
      { name: 'points_1h', engine: 'MaterializedView' },
      { name: 'points_1h_g1', engine: 'AggregatingMergeTree' },
      { name: 'points_1h_sealed', engine: 'MergeTree' }, // the sealed buckets stay, emptied by the swap
      { name: 'points_1m', engine: 'MaterializedView' },
      { name: 'points_1m_g1', engine: 'AggregatingMergeTree' },
      { name: 'points_1m_sealed', engine: 'MergeTree' },
      { name: 'points_g1', engine: 'MergeTree' },
      { name: 'points_seals', engine: 'MergeTree' },
      { name: 'points_seals_g1', engine: 'MergeTree' },
    ]);

    // The live projector goes on from the new table's positions and seals the share there, once.
    total += pending.points;
    await restartedWorkerSeals('the pending staged upload sealed into the new generation');
    expect(await pointsOf('points', pending.taskId)).toBe(pending.points);
    expect((await sealsOf('points_seals')).filter((s) => (s as { task_id: string }).task_id === pending.taskId)).toHaveLength(2);
    expect(await stagesIn(own.CLICKHOUSE_DATABASE)).toBe(0);
  });

  it('a swap that freezes a share attached live before its seal is recorded: the share is left to the retried seal, which lands in the new generation once', async (ctx) => {
    await skipUnlessSwappable(ctx, platform);
    await worker?.close();
    worker = null;
    const topic = platform.topics.points;
    const held = await write({ staged: true, batches: [batch(0, 'st.k', 0, 3), batch(0, 'st.k', 10, 2)] });
    // The live projector's state when the freeze came between its ATTACH and its seal row: the stage
    // (as the upload's job wrote it) attached to points, the seal not recorded, the stage still there.
    const stage = await createPointsStages(platform.clickhouse).open(held.taskId, held.attempt!, 0);
    await stage.insert(held.segments);
    const stageName = createPointsStages(platform.clickhouse).tableOf(held.taskId, held.attempt!, 0);
    await platform.clickhouse.command({ query: `ALTER TABLE points ATTACH PARTITION tuple() FROM ${stageName}` });
    expect(await pointsOf('points', held.taskId)).toBe(held.points);
    expect(await count(`SELECT count() FROM points_seals WHERE task_id = '${held.taskId}'`)).toBe(0);

    // A generation built up to the seal (not past it), swapped in: the frozen position leaves the attached share out.
    const { end } = await platform.log.offsets(topic);
    const beforeSeal = new Map([...end].map(([p, e]) => [p, (held.seals.get(p) ?? e) - 1]));
    const result = await rebuildPoints(platform, { to: { kind: 'offsets', offsets: beforeSeal }, swap: 'always', waitForLiveMs: 0 });
    expect(result.swap).toMatchObject({ nudged: false });
    expect(await pointsOf('points', held.taskId)).toBe(0);

    // The live projector's seal, retried after the swap (here: restarted), attaches the stage into the new generation.
    total += held.points;
    await restartedWorkerSeals('the held share sealed into the new generation');
    expect(await sealsOf('points_seals')).toContainEqual(expect.objectContaining({ task_id: held.taskId, kafka_partition: 0 }));
    expect(await stagesIn(own.CLICKHOUSE_DATABASE)).toBe(0);
  });

  it('a swap that fails while frozen puts points and points_seals back as they were, and leaves no stand-in', async (ctx) => {
    await skipUnlessSwappable(ctx, platform);
    const sealsBefore = await sealsOf('points_seals');
    const pointsBefore = await tableChecksums(platform.clickhouse, 'points');
    await expect(
      rebuildPoints(platform, {
        swap: 'always',
        waitForLiveMs: 0,
        whileFrozen: async () => {
          throw new Error('stopped while frozen');
        },
      }),
    ).rejects.toThrow(/stopped while frozen/);
    const tables = await rows<{ name: string; engine: string }>(
      "SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND (name IN ('points', 'points_seals') OR name LIKE '%frozen%') ORDER BY name",
    );
    expect(tables).toEqual([
      { name: 'points', engine: 'MergeTree' },
      { name: 'points_seals', engine: 'MergeTree' },
    ]);
    expect(await sealsOf('points_seals')).toEqual(sealsBefore);
    expect(await tableChecksums(platform.clickhouse, 'points')).toEqual(pointsBefore);
  });

  it("a point in time between a staged upload's batches and its seal leaves it out; between two partitions' seals, exactly the sealed shares", async () => {
    if (!worker) worker = await startWorker(own);
    const base = Date.now() + 5_000; // after every record written so far
    // Batches at base, seals at base + 2; the second upload's batches at base + 4, its seal in partition 0 at base + 5, in 1 at base + 7.
    const early = await write({
      staged: true,
      batches: [batch(0, 'st.h', 0, 2), batch(1, 'st.h', 5, 3)],
      batchesAt: base,
      sealsAt: new Map([
        [0, base + 2],
        [1, base + 2],
      ]),
    });
    const split = await write({
      staged: true,
      batches: [batch(0, 'st.i', 0, 4), batch(1, 'st.j', 0, 3)],
      batchesAt: base + 4,
      sealsAt: new Map([
        [0, base + 5],
        [1, base + 7],
      ]),
    });
    total += early.points + split.points;
    await waitForLive('both staged uploads sealed live');
    const others = await count(`SELECT count() FROM points WHERE task_id NOT IN ('${early.taskId}', '${split.taskId}')`);

    for (const [i, cut] of [
      { at: base + 1, early: [0, 0], split: [0, 0] },
      { at: base + 6, early: [2, 3], split: [4, 0] },
    ].entries()) {
      const db = `${own.CLICKHOUSE_DATABASE}_cut${i}`;
      try {
        const result = await rebuildPoints(platform, { to: { kind: 'time', ms: cut.at }, database: db });
        expect(result.stats.unsealedBatches).toBe(0);
        const share = (task: string, p: number) => count(`SELECT count() FROM ${db}.points WHERE task_id = '${task}' AND kafka_partition = ${p}`);
        expect([await share(early.taskId, 0), await share(early.taskId, 1)], `cut ${i}`).toEqual(cut.early);
        expect([await share(split.taskId, 0), await share(split.taskId, 1)], `cut ${i}`).toEqual(cut.split);
        expect(await count(`SELECT count() FROM ${db}.points WHERE task_id NOT IN ('${early.taskId}', '${split.taskId}')`)).toBe(others);
        const sealed = (await sealsOf(`${db}.points_seals`)).map(
          (s) => `${(s as { task_id: string }).task_id}/${(s as { kafka_partition: number }).kafka_partition}`,
        );
        expect(sealed.filter((s) => s.startsWith(early.taskId) || s.startsWith(split.taskId)).sort(), `cut ${i}`).toEqual(
          [...(cut.early[0]! > 0 ? [`${early.taskId}/0`, `${early.taskId}/1`] : []), ...(cut.split[0]! > 0 ? [`${split.taskId}/0`] : [])].sort(),
        );
        expect(await catalogOf(`${db}.metric_catalog`)).toEqual(await perMetric(`${db}.points`));
        expect(await stagesIn(db)).toBe(0);
      } finally {
        await platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${db}` });
      }
    }
  });
});
