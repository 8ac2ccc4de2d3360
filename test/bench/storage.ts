import { Readable } from 'node:stream';
import type { Settings } from '@meridian/config';
import { remoteWriteBody } from '../support/protocol-bodies.ts';
import {
  clickhouseUrl,
  archiveDataBytes,
  benchApi,
  cpuSplit,
  dropBenchScope,
  fmt,
  kafkaTopicBytes,
  postStream,
  stackProcesses,
  startProcess,
  waitUntil,
  readyAdminKey,
} from './common.ts';
import { archiveVariants } from './archive-variants.ts';
import { pointBatchCodecFigures } from './point-batch-codec.ts';
import { pointsVariants, type PointsVariant, type ZstdCase } from './points-variants.ts';
import { codecCases, pointsOnModern, type ModernPoints } from './points-modern.ts';
import type { Series } from './telemetry.ts';
import { telemetryFleet, type Fleet } from './telemetry-fleet.ts';
import { startVictoriaMetrics } from './victoria-metrics.ts';

/**
 * make bench-storage: bytes a point on disk and CPU a million points, for one fleet of realistic
 * telemetry (telemetry-fleet.ts: walks, counters, levels and noisy gauges, scraped every 10, 15
 * or 60 s), pushed as Prometheus remote write, window by window, to VictoriaMetrics and to
 * Meridian twice in one run: as before (point batches uncompressed, PointBatch v3) and as now
 * (zstd, PointBatch v5). First the point batches alone, in this process (the codec table).
 *
 * Meridian's bytes: each topic's log segments in Kafka's log dir (the local stack's), each
 * ClickHouse table's active parts after OPTIMIZE FINAL (system.parts bytes_on_disk); Meridian's
 * own processes' CPU (the api decodes, batches and encodes; the ingest worker projects) and the
 * stack's (shared with other work: its figures are noisier). VictoriaMetrics: its data dir after
 * a flush, once still.
 *   BENCH_POINTS=10000000   points of the fleet
 *   BENCH_SERIES=1000       series of the fleet
 *   BENCH_IDLE_S=0            seconds of each Meridian left idle once every point is in, its CPU a minute printed
 *   BENCH_SYSTEMS=victoria-metrics,before,after   (also: deltas, zstd: each change alone; archive,
 *     archive-window: as after, with the points archive on; v4, archive-window-v4: point batches
 *     not packed, as before v5)
 *   BENCH_ZSTD_LEVELS=        zstd levels for merged parts of a private ClickHouse fed each Meridian's `points`
 *     (`default`: zstd's default level for every part, as before; e.g. default,6,9), beside `task_id`
 *     as a UUID: points-variants.ts
 *   BENCH_ARCHIVE_LEVELS=0    1: the archive's segments compressed again per zstd level and long mode (archive-variants.ts)
 *   BENCH_ZSTD_MIN_PART=0     the compressed bytes a merge's parts must reach for that level
 *   BENCH_ZSTD_BLOCK=         min and max compress block sizes in those servers' default profile (every column's blocks)
 *   BENCH_MODERN=1            each Meridian's `points` copied into a current ClickHouse (chDB, 26.9) migrated as
 *     Meridian migrates it, so the migrations' column codecs apply: points-modern.ts (0: not)
 *   BENCH_CODECS=             codec cases on that server beside it (`all`, or names: points-modern.ts CODEC_CASES)
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 10_000_000);
const SERIES = Number(process.env.BENCH_SERIES ?? 1000);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 0);
const BLOCK_BYTES = process.env.BENCH_ZSTD_BLOCK ? Number(process.env.BENCH_ZSTD_BLOCK) : undefined;
const ZSTD_CASES: ZstdCase[] = (process.env.BENCH_ZSTD_LEVELS ?? '')
  .split(',')
  .filter(Boolean)
  .map((l) =>
    l === 'default'
      ? { name: 'zstd, default level' }
      : {
          name: `zstd level ${l} from ${process.env.BENCH_ZSTD_MIN_PART ?? 0} B`,
          level: Number(l),
          minPartBytes: Number(process.env.BENCH_ZSTD_MIN_PART ?? 0),
        },
  )
  .map((c) => (BLOCK_BYTES === undefined ? c : { ...c, name: `${c.name}, blocks of ${BLOCK_BYTES} B`, blockBytes: BLOCK_BYTES }));
const ARCHIVE_LEVELS = process.env.BENCH_ARCHIVE_LEVELS === '1';
const MODERN = process.env.BENCH_MODERN !== '0';
const CODEC_CASES = codecCases(process.env.BENCH_CODECS ?? '');
const SYSTEMS = (process.env.BENCH_SYSTEMS ?? 'victoria-metrics,before,after').split(',').filter(Boolean);
/** Two minutes of scrapes a push: about 7,300 points of 1,000 series, as an agent batching its sends. */
const WINDOW_MS = 120_000;
const PRODUCERS = 4;
const T0 = Date.UTC(2024, 0, 1);
const PREFIX = 'fleet';

type Row = {
  readonly system: string;
  readonly bytes: ReadonlyArray<readonly [string, number]>;
  readonly cpu: ReadonlyArray<readonly [string, number]>;
  readonly seconds: number;
  /** `points`' compressed bytes by column (Meridian's rows). */
  readonly columns?: ReadonlyArray<readonly [string, number]>;
  /** CPU-seconds a minute of each process once every point is in, the system idle (BENCH_IDLE_S): what background passes cost. */
  readonly idle?: ReadonlyArray<readonly [string, number]>;
  /** `points` copied into a private ClickHouse per zstd case, as String and UUID task ids (BENCH_ZSTD_LEVELS). */
  readonly variants?: readonly PointsVariant[];
  /** The archive's segments compressed per case (BENCH_ARCHIVE_LEVELS). */
  readonly archiveCases?: Awaited<ReturnType<typeof archiveVariants>>;
  /** `points` on a current ClickHouse with the migrations' codecs, and the codec cases (BENCH_MODERN, BENCH_CODECS). */
  readonly modern?: ModernPoints;
};

const bodyOf = (window: readonly Series[]) =>
  remoteWriteBody(window.map((s) => ({ labels: [['__name__', s.name]], samples: s.timestamps.map((t, i) => [t, s.values[i]!] as const) })));

/** Sends every window's body to `url` from PRODUCERS senders, each taking the next body; waits out 429 and 503. */
async function pushAll(fleet: Fleet, url: string, headers: Record<string, string>): Promise<void> {
  const windows = fleet.windows(WINDOW_MS);
  const send = async () => {
    for (let next = windows.next(); !next.done; next = windows.next()) {
      const body = bodyOf(next.value);
      for (;;) {
        const res = await postStream(
          url,
          { ...headers, 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'snappy', 'Content-Length': String(body.length) },
          Readable.from([body]),
        );
        if (res.status === 429 || res.status === 503) {
          await new Promise((r) => setTimeout(r, Number(res.headers['retry-after'] ?? 1) * 1000));
          continue;
        }
        if (res.status < 200 || res.status > 299) throw new Error(`push to ${url}: ${res.status} ${res.text}`);
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: PRODUCERS }, send));
}

async function victoriaMetrics(fleet: Fleet): Promise<Row> {
  const vm = await startVictoriaMetrics();
  try {
    const split = cpuSplit([{ name: 'victoria-metrics', cpuSeconds: vm.cpuSeconds }]);
    const started = performance.now();
    await pushAll(fleet, `${vm.url}/api/v1/write`, {});
    await vm.flush();
    await waitUntil(
      'VictoriaMetrics to count every point',
      async () => ((await vm.count(`{__name__=~"${PREFIX}_.*"}`, fleet.t0 + fleet.spanMs + 60_000, fleet.spanMs + 120_000)) >= fleet.points ? true : undefined),
      600_000,
      500,
    );
    const seconds = (performance.now() - started) / 1000;
    const spent = split.end();
    return { system: 'VictoriaMetrics', bytes: [['data dir', await vm.dataBytes()]], cpu: [['victoria-metrics', spent.of('victoria-metrics')]], seconds };
  } finally {
    await vm.stop();
  }
}

async function clickhouse(settings: Settings, query: string): Promise<string> {
  const res = await fetch(clickhouseUrl(settings, { database: settings.CLICKHOUSE_DATABASE, query }), { method: 'POST' });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse: ${res.status} ${text}`);
  return text;
}

/** Each table's active parts after merging them all: system.parts of the scope's database. */
async function tableBytes(settings: Settings): Promise<Array<[string, number]>> {
  const tables = (await clickhouse(settings, `SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree%'`))
    .split('\n')
    .filter(Boolean);
  // OPTIMIZE FINAL merges what is not merging already: again until each table is one part (18.16 answers at once when a merge holds its parts).
  for (const table of tables) {
    for (let round = 0; round < 20; round++) {
      await clickhouse(settings, `OPTIMIZE TABLE \`${table}\` FINAL`);
      const parts = Number(await clickhouse(settings, `SELECT count() FROM system.parts WHERE active AND database = currentDatabase() AND table = '${table}'`));
      if (parts <= 1) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  const rows = (
    await clickhouse(
      settings,
      `SELECT table, sum(bytes_on_disk) FROM system.parts WHERE active AND database = currentDatabase() GROUP BY table ORDER BY table FORMAT TabSeparated`,
    )
  )
    .split('\n')
    .filter(Boolean);
  return rows.map((line) => line.split('\t')).map(([table, bytes]) => [`ClickHouse ${table!}`, Number(bytes)]);
}

/** `points`' compressed bytes by column once merged to one part (system.columns, which 18.16 has). */
async function pointsColumnBytes(settings: Settings): Promise<Array<[string, number]>> {
  const rows = await clickhouse(
    settings,
    `SELECT name, data_compressed_bytes FROM system.columns WHERE database = currentDatabase() AND table = 'points' FORMAT TabSeparated`,
  );
  return rows
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t'))
    .map(([column, bytes]) => [column!, Number(bytes)]);
}

/** The apps' log lines at error and above, but for the readiness probe's answers while they start. */
const quiet = (line: string) => {
  if (/"level":"(error|fatal)"/.test(line) && !line.includes('"path":"/readyz"')) console.log(line);
};

/** Each process's CPU-seconds a minute over BENCH_IDLE_S seconds with nothing sent (none when 0). */
async function idleCpu(processes: Array<{ name: string; cpuSeconds(): number }>): Promise<Array<[string, number]> | undefined> {
  if (IDLE_S <= 0) return undefined;
  const split = cpuSplit(processes);
  await new Promise((r) => setTimeout(r, IDLE_S * 1000));
  const spent = split.end();
  return processes.map((p) => [p.name, (spent.of(p.name) * 60) / IDLE_S]);
}

/**
 * The archive's bytes once it holds every point pushed: with a window (MERIDIAN_ARCHIVE_RETENTION_MS),
 * a record is archived before the window trims it, so once the window and two passes have gone by
 * since the last push, and the bytes hold still, every record is in (a fast run read otherwise
 * only what the passes during it wrote). Without a window only cut segments are archived (a
 * partition's tail waits for its cut), so what is there now.
 */
async function settledArchiveBytes(settings: Settings, env: Record<string, string>): Promise<number> {
  const windowMs = Number(env.MERIDIAN_ARCHIVE_RETENTION_MS ?? 0);
  if (env.MERIDIAN_ARCHIVE !== 'true' || windowMs <= 0) return archiveDataBytes(settings);
  await new Promise((r) => setTimeout(r, windowMs + 2 * Number(env.MERIDIAN_ARCHIVE_INTERVAL_MS ?? 60_000)));
  let last = archiveDataBytes(settings);
  return waitUntil(
    'the archive holding still',
    () => {
      const now = archiveDataBytes(settings);
      const still = now === last && now > 0;
      last = now;
      return Promise.resolve(still ? now : undefined);
    },
    300_000,
    5000,
  );
}

async function meridian(fleet: Fleet, name: string, env: Record<string, string>): Promise<Row> {
  const { settings, base } = await benchApi(env);
  const api = startProcess('apps/api/src/main.ts', settings, {}, undefined, quiet);
  const ingest = startProcess('apps/ingest/src/main.ts', settings, {}, undefined, quiet);
  try {
    const admin = { Authorization: `Bearer ${await readyAdminKey(settings, base)}`, 'Content-Type': 'application/json' };
    const created = await fetch(`${base}/api/v1/users`, { method: 'POST', headers: admin, body: JSON.stringify({ user_name: 'storage' }) });
    if (created.status !== 201) throw new Error(`creating the user: ${created.status} ${await created.text()}`);
    const key = ((await created.json()) as { api_key: string }).api_key;
    const rules = await fetch(`${base}/api/v1/users/storage/entitlements`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ metrics: [{ match: 'prefix', value: `${PREFIX}_`, access: 'rw' }] }),
    });
    if (rules.status !== 200) throw new Error(`entitlements: ${rules.status} ${await rules.text()}`);
    const processes = [{ name: 'api', cpuSeconds: api.cpuSeconds }, { name: 'ingest', cpuSeconds: ingest.cpuSeconds }, ...stackProcesses()];
    const split = cpuSplit(processes);
    const started = performance.now();
    await pushAll(fleet, `${base}/api/v1/write`, { Authorization: `Bearer ${key}` });
    await waitUntil(
      'every point in points',
      async () => (Number(await clickhouse(settings, 'SELECT count() FROM points')) >= fleet.points ? true : undefined),
      1_800_000,
      1000,
    );
    const seconds = (performance.now() - started) / 1000;
    const spent = split.end();
    console.log(`  ${name}: ${spent.line}`);
    const idle = await idleCpu(processes);
    const topics = [...kafkaTopicBytes(settings.MERIDIAN_TOPIC_PREFIX)]
      .filter(([, b]) => b > 0)
      .map(([t, b]): [string, number] => [`Kafka ${t.slice(settings.MERIDIAN_TOPIC_PREFIX.length)}`, b]);
    // The archive (MERIDIAN_ARCHIVE) holds the points topic's history in the bucket; what is trimmed from the brokers lives on there.
    const archive = await settledArchiveBytes(settings, env);
    const archived: Array<[string, number]> = archive > 0 ? [['MinIO points archive', archive]] : [];
    const variants = ZSTD_CASES.length > 0 ? await pointsVariants(settings, ZSTD_CASES) : undefined;
    const archiveCases = ARCHIVE_LEVELS && archive > 0 ? await archiveVariants(settings) : undefined;
    const modern = MODERN ? await pointsOnModern(settings, CODEC_CASES) : undefined;
    return {
      system: name,
      bytes: [...topics, ...archived, ...(await tableBytes(settings))],
      columns: await pointsColumnBytes(settings),
      cpu: processes.map((p) => [p.name, spent.of(p.name)]),
      seconds,
      ...(idle ? { idle } : {}),
      ...(variants ? { variants } : {}),
      ...(archiveCases ? { archiveCases } : {}),
      ...(modern ? { modern } : {}),
    };
  } finally {
    await Promise.all([api.stop(), ingest.stop()]);
    await dropBenchScope(settings);
  }
}

// The compression cases keep the archive off, as they were measured before it existed.
const V3 = { MERIDIAN_POINT_BATCH_DELTAS: 'false', MERIDIAN_POINT_BATCH_PACKED: 'false' };
const V4 = { MERIDIAN_POINT_BATCH_DELTAS: 'true', MERIDIAN_POINT_BATCH_PACKED: 'false' };
const V5 = { MERIDIAN_POINT_BATCH_DELTAS: 'true', MERIDIAN_POINT_BATCH_PACKED: 'true' };
/** The archive on with a window short enough that it archives and trims during the run. */
const ARCHIVE_WINDOW = { MERIDIAN_ARCHIVE: 'true', MERIDIAN_ARCHIVE_INTERVAL_MS: '2000', MERIDIAN_ARCHIVE_RETENTION_MS: '20000' };
const MERIDIANS: Record<string, { readonly label: string; readonly env: Record<string, string> }> = {
  before: { label: 'Meridian before (uncompressed, v3)', env: { MERIDIAN_LOG_COMPRESSION: 'none', ...V3, MERIDIAN_ARCHIVE: 'false' } },
  after: { label: 'Meridian now (zstd, v5), archive off', env: { MERIDIAN_LOG_COMPRESSION: 'zstd', ...V5, MERIDIAN_ARCHIVE: 'false' } },
  // The points archive on, as shipped (a pass a minute, a 7-day window: it reads back the unarchived tail each pass, cuts little).
  archive: { label: 'Meridian now, archive on (defaults)', env: { MERIDIAN_LOG_COMPRESSION: 'zstd', ...V5, MERIDIAN_ARCHIVE: 'true' } },
  'archive-window': {
    label: 'Meridian now, archive on (a pass every 2 s, a 20 s window)',
    env: { MERIDIAN_LOG_COMPRESSION: 'zstd', ...V5, ...ARCHIVE_WINDOW },
  },
  // Point batches as before v5 (not packed), beside the cases above.
  v4: { label: 'Meridian with v4 (zstd), archive off', env: { MERIDIAN_LOG_COMPRESSION: 'zstd', ...V4, MERIDIAN_ARCHIVE: 'false' } },
  'archive-window-v4': { label: 'Meridian with v4, archive on (2 s, 20 s)', env: { MERIDIAN_LOG_COMPRESSION: 'zstd', ...V4, ...ARCHIVE_WINDOW } },
  // Each change alone.
  deltas: { label: 'Meridian with v4 alone (uncompressed)', env: { MERIDIAN_LOG_COMPRESSION: 'none', ...V4, MERIDIAN_ARCHIVE: 'false' } },
  zstd: { label: 'Meridian with zstd alone (v3)', env: { MERIDIAN_LOG_COMPRESSION: 'zstd', ...V3, MERIDIAN_ARCHIVE: 'false' } },
};

function printArchiveCases(a: Awaited<ReturnType<typeof archiveVariants>>, points: number): void {
  console.log(
    `  the archive's ${a.segments} segments (${(a.framingBytes / points).toFixed(2)} B/point of framing) compressed again, B/point, CPU-s a million points compress / decompress:`,
  );
  for (const v of a.variants)
    console.log(
      `    ${v.name.padEnd(30)} ${(v.storedBytes / points).toFixed(3).padStart(7)}  ${((v.compressCpuSeconds * 1e6) / points).toFixed(3)} / ${((v.decompressCpuSeconds * 1e6) / points).toFixed(3)}`,
    );
}

function printVariant(v: PointsVariant, points: number): void {
  console.log(
    `  ${v.name} (private ClickHouse, ${v.cpuSeconds.toFixed(2)} CPU-s copy and merge, ${((v.cpuSeconds * 1e6) / points).toFixed(2)} a million points; ${v.taskIdsPerBlock.toFixed(0)} task ids a 1 MiB block):`,
  );
  for (const table of ['points_string', 'points_uuid']) {
    const cols = v.columns.filter(([t]) => t === table);
    const total = cols.reduce((n, [, , b]) => n + b, 0);
    console.log(`    ${table.padEnd(14)} ${(total / points).toFixed(3)} B/point: ${cols.map(([, c, b]) => `${c} ${(b / points).toFixed(3)}`).join(', ')}`);
  }
}

/** `points` on the current server by column, archive plus it against VictoriaMetrics, and each codec case's columns and CPU. */
function printModern(row: Row, points: number, vmPerPoint: number): void {
  const m = row.modern!;
  const perPoint = (b: number) => (b / points).toFixed(3);
  const total = m.columns.reduce((n, [, b]) => n + b, 0);
  console.log(
    `  ClickHouse ${m.version} points (migrated, one part): ${perPoint(total)} B/point, ${((m.copyCpuSeconds * 1e6) / points).toFixed(2)} CPU-s a million points to copy in and merge`,
  );
  for (const [column, bytes, codec] of m.columns) console.log(`    ${column.padEnd(16)} ${perPoint(bytes).padStart(7)}  ${codec}`);
  const archive = row.bytes.find(([where]) => where === 'MinIO points archive')?.[1];
  if (archive !== undefined) {
    const both = (archive + total) / points;
    console.log(`  archive + points on ${m.version}: ${both.toFixed(2)} B/point, ${(both / vmPerPoint).toFixed(2)}× VictoriaMetrics`);
  }
  for (const c of m.cases) {
    const sum = c.columns.reduce((n, [, b]) => n + b, 0);
    console.log(
      `    case ${c.name.padEnd(13)} ${perPoint(sum)} B/point, ${((c.cpuSeconds * 1e6) / points).toFixed(2)} CPU-s a million points: ${c.columns.map(([col, b]) => `${col} ${perPoint(b)}`).join(', ')}`,
    );
  }
}

function print(rows: readonly Row[], points: number): void {
  const vm = rows.find((r) => r.system === 'VictoriaMetrics');
  const vmPerPoint = vm === undefined ? NaN : vm.bytes.reduce((n, [, b]) => n + b, 0) / points;
  for (const row of rows) {
    const total = row.bytes.reduce((n, [, b]) => n + b, 0);
    const against = Number.isFinite(vmPerPoint) && row !== vm ? ` (${(total / points / vmPerPoint).toFixed(1)}× VictoriaMetrics)` : '';
    console.log(`\n${row.system}: ${(total / points).toFixed(2)} bytes a point in all${against}, ${fmt(points / row.seconds)} points/s`);
    for (const [where, bytes] of row.bytes) console.log(`  ${where.padEnd(40)} ${(bytes / points).toFixed(3).padStart(8)} B/point  ${fmt(bytes / 1024)} KiB`);
    console.log(`  CPU-seconds a million points: ${row.cpu.map(([p, s]) => `${p} ${((s * 1e6) / points).toFixed(2)}`).join(', ')}`);
    if (row.columns) console.log(`  ClickHouse points by column, B/point: ${row.columns.map(([c, b]) => `${c} ${(b / points).toFixed(3)}`).join(', ')}`);
    for (const v of row.variants ?? []) printVariant(v, points);
    if (row.archiveCases) printArchiveCases(row.archiveCases, points);
    if (row.modern) printModern(row, points, vmPerPoint);
    if (row.idle) console.log(`  idle, CPU-seconds a minute: ${row.idle.map(([p, s]) => `${p} ${s.toFixed(2)}`).join(', ')}`);
  }
}

async function main(): Promise<void> {
  const fleet = telemetryFleet({ series: SERIES, points: POINTS, t0: T0, prefix: PREFIX });
  console.log(
    `bench-storage: ${fmt(fleet.points)} points of ${fmt(SERIES)} series over ${(fleet.spanMs / 3_600_000).toFixed(1)} h, pushed as remote write in ${WINDOW_MS / 1000} s windows by ${PRODUCERS} senders`,
  );
  console.log("\nThe points topic's batches alone, in this process (as a push batches them, 50,000 points a batch at most):");
  console.log('  layout                        B/point  encode+compress µs/point  decompress+decode µs/point');
  for (const f of await pointBatchCodecFigures(fleet.windows(WINDOW_MS), { batchPoints: 50_000, partitions: 3 })) {
    console.log(
      `  ${f.layout.padEnd(28)} ${f.bytesPerPoint.toFixed(2).padStart(7)}  ${f.encodeUs.toFixed(3).padStart(24)}  ${f.decodeUs.toFixed(3).padStart(26)}`,
    );
  }
  const rows: Row[] = [];
  for (const system of SYSTEMS) {
    console.log(`\n${system}: pushing…`);
    if (system === 'victoria-metrics') rows.push(await victoriaMetrics(fleet));
    else if (MERIDIANS[system]) rows.push(await meridian(fleet, MERIDIANS[system].label, MERIDIANS[system].env));
    else throw new Error(`unknown system ${system} (BENCH_SYSTEMS: ${Object.keys(MERIDIANS).join(', ')}, victoria-metrics)`);
  }
  print(rows, fleet.points);
  console.log("\nThe machine is shared: the stack's CPU (kafka, clickhouse, minio) includes other work on it.");
}

await main();
