import { adapterOptions } from '@meridian/config';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { get, type IncomingMessage } from 'node:http';
import { createClickHouse, ensureDatabase, migrate, planDownload, streamDownload, type DownloadRequest } from '@meridian/clickhouse';
import { adminKey, apiNodeOf, benchApi, dropBenchScope, fmt, repoRoot, startProcess, waitUntil } from './common.ts';
import { frames, type FrameApi } from './download-frames.ts';
import { freePort } from '../support/ports.ts';

/**
 * make bench-download: 10M points over 1,000 metrics, downloaded through a real api process
 * as CSV and JSON, plain and gzip, Arrow and Parquet, with starts_with (10M rows) and list (1M
 * rows) — each against the same query read straight from ClickHouse's HTTP interface in this
 * process (for Arrow and Parquet: the Native columns the api encodes). Then the same 10M rows to
 * a pandas DataFrame four ways, each in a Python process of its own (test/bench/frames.py): CSV
 * and pd.read_csv, Parquet and pd.read_parquet, Arrow through the Python client in one page and
 * in its default pages; seconds to the frame (and when the body was read), the Python
 * process's peak RSS and the api's, side by side.
 * BENCH_API_ROOTS (checkouts, comma-separated, each with optional `+NAME=value` settings; this
 * one by default) starts an api of each; every scenario and the Arrow frames run through each in
 * turn (download-frames.ts), so a change is compared with its base at the same load.
 *   BENCH_ROWS=10000000 BENCH_REPEAT=3 BENCH_SCENARIOS=<regexp of labels, then no frames unless BENCH_FRAMES=1> make bench-download
 *   BENCH_API_ROOTS=../base-checkout,. BENCH_WAYS=arrow make bench-download
 */
const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const METRICS = 1000;
const T = 1_600_000_000_000;
// A gzip CSV download of 10M rows is one query whose first byte follows the whole sort: on a
// loaded machine that passed the api's 60 s idle timeout and the connection was closed.
const API_ROOTS = (process.env.BENCH_API_ROOTS ?? repoRoot).split(',').map((entry) => {
  const [root, ...env] = entry.split('+');
  return { root: `${resolve(root!)}/`, env: Object.fromEntries(env.map((e) => e.split('=') as [string, string])), name: entry };
});
const { settings } = await benchApi({ MERIDIAN_MAX_ROWS_CEILING: String(ROWS), MERIDIAN_HTTP_IDLE_TIMEOUT_MS: '600000' });
const conn = adapterOptions(settings, 'bench-download').clickhouse;
const names = Array.from({ length: METRICS }, (_, i) => `bench.m${String(i).padStart(4, '0')}`);

type Measure = { rows: number; bytes: number; ms: number; ttfbMs: number };

async function drain(body: AsyncIterable<Uint8Array>, started: number): Promise<{ bytes: number; ttfbMs: number }> {
  let bytes = 0;
  let ttfb = -1;
  for await (const chunk of body) {
    if (ttfb < 0) ttfb = performance.now() - started;
    bytes += chunk.length;
  }
  return { bytes, ttfbMs: ttfb };
}

/** Through the api with node:http, which (unlike fetch) leaves a gzip body compressed, as a client saving it would. */
async function viaApi(base: string, key: string, qs: string, gzip: boolean, rows: number): Promise<Measure> {
  const started = performance.now();
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    get(`${base}/api/v1/metrics/download?${qs}`, { headers: { Authorization: `Bearer ${key}`, 'Accept-Encoding': gzip ? 'gzip' : 'identity' } }, resolve).on(
      'error',
      reject,
    );
  });
  if (res.statusCode !== 200) throw new Error(`download ${qs}: ${res.statusCode}`);
  const { bytes, ttfbMs } = await drain(res, started);
  return { rows, bytes, ms: performance.now() - started, ttfbMs };
}

async function straight(metricNames: string[], format: DownloadRequest['format'], gzip: boolean, rows: number): Promise<Measure> {
  const req: DownloadRequest = {
    metricNames,
    fromMs: 0,
    toMs: 4_291_747_199_999,
    maxRows: ROWS,
    after: null,
    format,
    latestOnly: false,
    gzip,
    queryId: randomUUID(),
  };
  const started = performance.now();
  const plan = await planDownload(conn, req);
  const stream = await streamDownload(conn, req, { plan });
  const { bytes, ttfbMs } = await drain(stream.body as AsyncIterable<Uint8Array>, started);
  return { rows, bytes, ms: performance.now() - started, ttfbMs };
}

/** One api per checkout of BENCH_API_ROOTS, each on a port of its own, ready and knowing the key. */
async function startApis(key: () => Promise<string>): Promise<{ apis: FrameApi[]; key: string }> {
  const apis: FrameApi[] = [];
  for (const { root, env, name } of API_ROOTS) {
    const port = await freePort();
    const proc = startProcess('apps/api/src/main.ts', { ...settings, MERIDIAN_API_PORT: port }, env, root, undefined, await apiNodeOf(root));
    apis.push({ name, root, base: `http://127.0.0.1:${port}`, proc });
  }
  for (const api of apis) await waitUntil('the api', async () => ((await fetch(`${api.base}/readyz`)).ok ? true : undefined), 120_000, 250);
  const k = await key();
  for (const api of apis)
    await waitUntil(
      'the api to know the key',
      async () => ((await fetch(`${api.base}/api/v1/users`, { headers: { Authorization: `Bearer ${k}` } })).ok ? true : undefined),
      30_000,
    );
  return { apis, key: k };
}

type Scenario = [label: string, qs: string, metricNames: string[], format: DownloadRequest['format'], gzip: boolean, rows: number];

function scenarios(): Scenario[] {
  const list = names.slice(0, 100);
  const listRows = (ROWS / METRICS) * list.length;
  return [
    ['starts_with, CSV', `metrics=bench.m&pattern=starts_with&max_rows=${ROWS}`, names, 'csv', false, ROWS],
    ['starts_with, CSV gzip', `metrics=bench.m&pattern=starts_with&max_rows=${ROWS}`, names, 'csv', true, ROWS],
    ['starts_with, JSON', `metrics=bench.m&pattern=starts_with&max_rows=${ROWS}&format=json`, names, 'json', false, ROWS],
    ['starts_with, Arrow', `metrics=bench.m&pattern=starts_with&max_rows=${ROWS}&format=arrow`, names, 'columns', false, ROWS],
    ['starts_with, Parquet', `metrics=bench.m&pattern=starts_with&max_rows=${ROWS}&format=parquet`, names, 'columns', false, ROWS],
    ['list of 100, CSV', `metrics=${encodeURIComponent(list.join(','))}&pattern=list&max_rows=${ROWS}`, list, 'csv', false, listRows],
    ['list of 100, JSON gzip', `metrics=${encodeURIComponent(list.join(','))}&pattern=list&max_rows=${ROWS}&format=json`, list, 'json', true, listRows],
  ];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The scenarios through every api, each against the straight query, alternating; the largest RSS growth of a full-size one. */
async function runScenarios(apis: readonly FrameApi[], key: string, only: RegExp | null): Promise<number> {
  const rate = (m: Measure) => (m.rows * 1000) / m.ms;
  let growth = 0;
  for (const [label, qs, metricNames, format, gzip, rows] of scenarios().filter(([label]) => !only || only.test(label))) {
    for (const { proc: api, base, name } of apis) {
      // Alternating runs, medians: one run on a shared 2-core machine varies by a fifth.
      const direct: Measure[] = [];
      const viaApiRuns: Measure[] = [];
      // The api's CPU-seconds a million rows (from /proc): what a busy machine disturbs least.
      const apiCpu: number[] = [];
      let scenarioGrowth = 0;
      for (let r = 0; r < REPEAT; r++) {
        direct.push(await straight(metricNames, format, gzip, rows));
        const before = api.rssMb();
        api.mark();
        const cpuBefore = api.cpuSeconds();
        viaApiRuns.push(await viaApi(base, key, qs, gzip, rows));
        apiCpu.push(((api.cpuSeconds() - cpuBefore) * 1e6) / rows);
        scenarioGrowth = Math.max(scenarioGrowth, api.windowPeakMb() - before);
      }
      if (rows === ROWS) growth = Math.max(growth, scenarioGrowth);
      const apiRate = median(viaApiRuns.map(rate));
      const directRate = median(direct.map(rate));
      console.log(
        `  ${(apis.length > 1 ? `${label} (${name})` : label).padEnd(24)} ${fmt(rows).padStart(10)} rows  api ${fmt(apiRate).padStart(9)} rows/s, first byte ${median(viaApiRuns.map((m) => m.ttfbMs)).toFixed(0)} ms, ${(viaApiRuns[0]!.bytes / 1e6).toFixed(0)} MB` +
          ` | straight ${fmt(directRate).padStart(9)} rows/s, first byte ${median(direct.map((m) => m.ttfbMs)).toFixed(0)} ms | ratio ${(apiRate / directRate).toFixed(2)} | api ${median(apiCpu).toFixed(2)} CPU-s/M rows | api RSS +${scenarioGrowth} MB (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  }
  return growth;
}

async function main(): Promise<void> {
  const client = createClickHouse(conn);
  await ensureDatabase(conn);
  await migrate(client);
  // The scope is dropped however the run ends, a load cut short too (10M rows are left behind otherwise).
  let apis: FrameApi[] = [];
  try {
    const loadStarted = performance.now();
    await client.command({
      query: `INSERT INTO points SELECT concat('bench.m', leftPadZeros) AS metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch FROM (
                SELECT substring(toString(10000 + number % ${METRICS}), 2) AS leftPadZeros, ${T} + intDiv(number, ${METRICS}) * 60000 AS ts,
                (number % 1000003) / 7.0 AS value, ${T} AS updated_at, 'bench' AS task_id, toUInt16(number % 3) AS kafka_partition,
                intDiv(number, ${METRICS}) AS kafka_offset, toUInt32(number % ${METRICS}) AS row_in_batch FROM system.numbers LIMIT ${ROWS})`,
    });
    console.log(`loaded ${fmt(ROWS)} points over ${METRICS} metrics in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);
    const started = await startApis(() => adminKey(settings));
    apis = started.apis;
    const { key } = started;
    console.log(
      `\nbench-download (${fmt(ROWS)} points over ${METRICS} metrics; api = real api process${apis.length > 1 ? ` of ${apis.map((a) => a.name).join(' and ')}` : ''}, straight = the same query from ClickHouse's HTTP interface; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')})`,
    );
    // Ready, the admin key known, no download yet: what every download's growth is counted from.
    console.log(`  api RSS idle, every route loaded: ${apis.map((a) => `${a.proc.rssMb()} MB`).join(', ')}`);
    const only = process.env.BENCH_SCENARIOS ? new RegExp(process.env.BENCH_SCENARIOS, 'i') : null;
    const growth = await runScenarios(apis, key, only);
    console.log(
      `  medians of ${REPEAT} runs each; peak api RSS: ${apis.map((a) => `${a.proc.peakRssMb()} MB`).join(', ')}; most RSS growth during a ${fmt(ROWS)}-row download: ${growth} MB (goal < 50 MB)`,
    );
    if (only && process.env.BENCH_FRAMES !== '1') return;
    const python = process.env.BENCH_PYTHON;
    if (!python) console.log("\nframes: not measured (BENCH_PYTHON unset: make bench-download sets it to the Python client's virtualenv)");
    else frames(python, `${repoRoot}test/bench/frames.py`, apis, key, ROWS, REPEAT);
  } finally {
    for (const api of apis) await api.proc.stop();
    await client.close();
    await dropBenchScope(settings);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
