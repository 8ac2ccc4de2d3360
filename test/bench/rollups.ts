import { adapterOptions } from '@meridian/config';
import {
  createClickHouse,
  createSealPass,
  ensureDatabase,
  markDeletion,
  MARKS,
  migrate,
  queryText,
  readRollupPage,
  ROLLUPS,
  serverCapabilities,
  type Resolution,
} from '@meridian/clickhouse';
import { benchApi, cpuSplit, dropBenchScope, fmt, percentile, stackProcesses, startProcess, readyAdminKey } from './common.ts';

/**
 * make bench-rollups: BENCH_POINTS points (10M by default) of one metric over the year 2024,
 * written into points as the projector writes them, then one day of them again with other values
 * and a newer updated_at (replaced points, as a day's file uploaded twice). It reports:
 *   1. what the rollup views cost at insert: the same rows into points (catalog and rollup views)
 *      and into a copy of points without views, ClickHouse CPU-seconds per million points each;
 *   2. that every 1m and 1h bucket read by the adapter (readRollupPage, with its fallback for the
 *      buckets holding replaced points) equals the aggregates of the deduplicated raw points
 *      computed by a query (newest row per timestamp, LIMIT 1 BY, as downloads choose it);
 *   3. a download at 1h over the year through a real api (JSON, p50 and max of BENCH_REPEAT), beside
 *      the same aggregates computed by a query from the raw points, the baseline without rollups;
 *   4. the seal pass (migration 011) run as the ingest worker runs it, pass after pass of at most
 *      MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS buckets per resolution until none is left, with its wall
 *      time and CPU; then one more pass with nothing to seal (what finding candidates costs), every
 *      bucket checked again against the raw points, and the download of 3 again, sealed, beside it.
 *   BENCH_POINTS=1000000 BENCH_REPEAT=3 make bench-rollups
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 10_000_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);
/** Deletions of an hour of the metric each, whose marks the last download is read beside (BENCH_MARKS, 1000). */
const BENCH_MARKS = Number(process.env.BENCH_MARKS ?? 1000);
const T0 = Date.UTC(2024, 0, 1);
const YEAR = Date.UTC(2025, 0, 1) - T0;
const STEP = Math.floor(YEAR / POINTS);
const METRIC = 'bench.rollups';
const { settings, base } = await benchApi({ MERIDIAN_MAX_ROLLUP_ROWS: '1000000' });
const conn = adapterOptions(settings, 'bench-rollups').clickhouse;

/** The points of one day (2024-03-01): uploaded again, as a producer that sends a day's file twice. */
const DAY = { first: Math.ceil((Date.UTC(2024, 2, 1) - T0) / STEP), count: Math.floor(86_400_000 / STEP) };

/** Rows as the projector writes them: value = (i mod 10007) / 8, exact in any sum; `replaced`: that day's points again, other values, newer. */
const rowsSql = (replaced: boolean) =>
  `SELECT '${METRIC}', ${T0} + number * ${STEP}, toFloat64(((number * ${replaced ? 7 : 1}) % 10007) / 8), ${T0 + (replaced ? 1 : 0)}, 'bench', 65535, ${replaced ? 1 : 0}, toUInt32(number) ` +
  (replaced ? `FROM numbers(${DAY.first}, ${DAY.count})` : `FROM numbers(${POINTS})`);

/** The reference for one resolution: the deduplicated raw points aggregated by a plain query, rows as readRollupPage gives them. */
const referenceSql = (stepMs: number) =>
  `SELECT toString(intDiv(ts, ${stepMs}) * ${stepMs}) AS bucket, count() AS n, min(value), max(value), sum(value), argMax(value, ts) FROM ` +
  `(SELECT ts, value FROM points WHERE metric_name = '${METRIC}' ORDER BY ts, updated_at DESC, kafka_partition DESC, kafka_offset DESC, row_in_batch DESC LIMIT 1 BY ts) ` +
  'GROUP BY bucket ORDER BY toInt64(bucket) FORMAT TabSeparated';

async function checkEqual(resolution: Resolution): Promise<{ buckets: number; dirty: number; ms: number }> {
  const expected = (await queryText(conn, { sql: referenceSql(ROLLUPS[resolution].stepMs) })).trimEnd().split('\n');
  const started = performance.now();
  let after = null;
  let i = 0;
  for (;;) {
    const page = await readRollupPage(conn, { resolution, metricNames: [METRIC], fromMs: T0, toMs: T0 + YEAR - 1, after, maxRows: 200_000 });
    for (const r of page.rows) {
      const line = [r.bucket, r.count, r.min, r.max, r.sum, r.last].join('\t');
      const want = expected[i++]!.split('\t').map(Number).join('\t');
      if (line !== want) throw new Error(`${resolution} bucket ${r.bucket}: rollup ${line}, raw points ${want}`);
    }
    if (page.next === null) break;
    after = page.next;
  }
  const ms = performance.now() - started;
  if (i !== expected.length) throw new Error(`${resolution}: ${i} buckets read, ${expected.length} in the raw points`);
  const table = ROLLUPS[resolution].table;
  const dirty = Number(
    await queryText(conn, {
      sql: `SELECT count() FROM (SELECT countMerge(rows) = uniqExactMerge(timestamps) AS clean FROM ${table} GROUP BY metric_name, bucket) WHERE NOT clean`,
    }),
  );
  return { buckets: i, dirty, ms };
}

async function timed(what: () => Promise<void>): Promise<{ p50: number; max: number }> {
  const ms: number[] = [];
  for (let k = 0; k < REPEAT; k++) {
    const started = performance.now();
    await what();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), max: ms.at(-1)! };
}

async function main(): Promise<void> {
  await ensureDatabase(conn);
  const client = createClickHouse(conn);
  const api = startProcess('apps/api/src/main.ts', settings);
  try {
    await migrate(client);
    const caps = await serverCapabilities(client);
    console.log(
      `ClickHouse ${caps.version}; ${fmt(POINTS)} points of one metric over 2024 (one every ${STEP} ms), the ${fmt(DAY.count)} of 2024-03-01 uploaded twice; a shared 2-core machine: figures vary from run to run`,
    );

    // 1. The views' cost at insert: the same rows with and without them.
    await client.command({ query: 'CREATE TABLE points_without_views AS points' });
    const procs = stackProcesses();
    const plainCpu = cpuSplit(procs);
    const plainStarted = performance.now();
    await client.command({ query: `INSERT INTO points_without_views ${rowsSql(false)}` });
    const plain = { ms: performance.now() - plainStarted, cpu: plainCpu.end() };
    const viewsCpu = cpuSplit(procs);
    const viewsStarted = performance.now();
    await client.command({ query: `INSERT INTO points ${rowsSql(false)}` });
    const views = { ms: performance.now() - viewsStarted, cpu: viewsCpu.end() };
    await client.command({ query: `INSERT INTO points ${rowsSql(true)}` });
    await client.command({ query: 'DROP TABLE points_without_views' });
    const perMillion = (cpu: number) => (procs.length === 0 ? 'n/a' : (cpu / (POINTS / 1e6)).toFixed(2));
    console.log('\ninsert of the points             wall ms   ClickHouse CPU-s per 1M points');
    console.log(`  into a table without views   ${fmt(plain.ms).padStart(9)}   ${perMillion(plain.cpu.of('clickhouse')).padStart(8)}`);
    console.log(`  into points (catalog, 1m, 1h) ${fmt(views.ms).padStart(8)}   ${perMillion(views.cpu.of('clickhouse')).padStart(8)}`);

    // 2. Every bucket equals the aggregates of the deduplicated raw points.
    console.log('\nevery bucket against the deduplicated raw points (a query)');
    for (const resolution of ['1h', '1m'] as const) {
      const r = await checkEqual(resolution);
      console.log(
        `  ${resolution}: ${fmt(r.buckets)} buckets equal (${fmt(r.dirty)} of them hold a replaced point, answered from points), read in ${fmt(r.ms)} ms`,
      );
    }

    // 3. A year at 1h through the api, beside the same aggregates by a query on the raw points.
    const key = await readyAdminKey(settings, base);
    const url = `${base}/api/v1/metrics/download?${new URLSearchParams({ metrics: METRIC, start_date: '2024-01-01', end_date: '2024-12-31', resolution: '1h', format: 'json', max_rows: '10000' })}`;
    let rows = 0;
    const viaApi = await timed(async () => {
      const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`download: ${res.status} ${await res.text()}`);
      rows = ((await res.json()) as unknown[]).length;
    });
    const raw = await timed(async () => void (await queryText(conn, { sql: referenceSql(3_600_000) })));

    // 4. The seal pass, as the worker runs it, then the same download again.
    console.log(
      `\nthe seal pass (MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS ${fmt(settings.MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS)} per resolution a pass), until nothing is left`,
    );
    const pass = createSealPass(conn, { maxBuckets: settings.MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS });
    for (let n = 1; ; n++) {
      const cpu = cpuSplit(procs);
      const mine = process.cpuUsage();
      const started = performance.now();
      const stats = await pass.run();
      const ms = performance.now() - started;
      const spent = cpu.end();
      const own = (process.cpuUsage(mine).user + process.cpuUsage(mine).system) / 1e6;
      const sealed = stats.map((st) => `${st.resolution} ${fmt(st.buckets)} (${fmt(st.replaced)} replaced)`).join(', ');
      console.log(
        `  pass ${n}: ${sealed.padEnd(40)} ${fmt(ms).padStart(7)} ms   ClickHouse CPU-s ${spent.of('clickhouse').toFixed(2)}, the pass's own ${own.toFixed(2)}`,
      );
      if (stats.every((st) => st.buckets === 0) || n > 50) break;
    }
    console.log('\nevery bucket against the deduplicated raw points, sealed');
    for (const resolution of ['1h', '1m'] as const) {
      const r = await checkEqual(resolution);
      console.log(`  ${resolution}: ${fmt(r.buckets)} buckets equal, read in ${fmt(r.ms)} ms`);
    }
    const download = async () => {
      const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`download: ${res.status} ${await res.text()}`);
    };
    const sealedApi = await timed(download);
    // 5. The same after deletions' marks of the metric (migration 013), as a deletion writes them:
    // one hour each, spread over the year, every one inside the download's range (the worst case).
    // Each adds 1 to its day's count; they void the seals of their days, which a 1h pass seals again.
    const hours = Math.floor(YEAR / 3_600_000);
    for (let i = 0; i < BENCH_MARKS; i++) {
      const from = T0 + Math.floor((i * hours) / BENCH_MARKS) * 3_600_000;
      await markDeletion(client, caps, { metrics: [METRIC], fromMs: from, toMs: from + 3_599_999, cause: `bench-${i}` }, `bench-rollups-mark-${i}`);
    }
    const markRows = Number(await queryText(conn, { sql: `SELECT count() FROM (SELECT period FROM ${MARKS} GROUP BY metric_name, period)` }));
    const resealed = await createSealPass(conn, { maxBuckets: settings.MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS, resolutions: ['1h'] }).run();
    const markedApi = await timed(download);
    console.log(`\na download at 1h over the year (${fmt(rows)} buckets of ${fmt(POINTS)} points), ${REPEAT} runs`);
    console.log(`  GET /api/v1/metrics/download?resolution=1h, not sealed    p50 ${fmt(viaApi.p50).padStart(6)} ms   max ${fmt(viaApi.max).padStart(6)} ms`);
    console.log(
      `  the same, every bucket sealed                            p50 ${fmt(sealedApi.p50).padStart(6)} ms   max ${fmt(sealedApi.max).padStart(6)} ms   (${(viaApi.p50 / sealedApi.p50).toFixed(1)}x faster)`,
    );
    console.log(
      `  the same, sealed, beside ${fmt(BENCH_MARKS)} marks in the year  p50 ${fmt(markedApi.p50).padStart(6)} ms   max ${fmt(markedApi.max).padStart(6)} ms   (${(markedApi.p50 / sealedApi.p50).toFixed(2)}x the sealed; ${fmt(markRows)} (metric, day) rows of marks; ${fmt(resealed[0]!.buckets)} hours sealed again)`,
    );
    console.log(
      `  the same aggregates by a query on the raw points          p50 ${fmt(raw.p50).padStart(6)} ms   max ${fmt(raw.max).padStart(6)} ms   (${(raw.p50 / sealedApi.p50).toFixed(1)}x the sealed)`,
    );
  } finally {
    await api.stop();
    await client.close();
    await dropBenchScope(settings);
  }
}

await main();
