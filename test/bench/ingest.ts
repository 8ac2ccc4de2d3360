import { createWriteStream, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  benchApi,
  clickhouseUrl,
  cpuSplit,
  dropBenchScope,
  type CpuSpent,
  csvPoints,
  downloadPoints,
  fileStream,
  fmt,
  postStream,
  stackProcesses,
  startProcess,
  waitUntil,
  readyAdminKey,
} from './common.ts';
import { benchJsonUploads, jsonFigureLines } from './json-uploads.ts';
import { benchParseRows } from './parse-rows.ts';
import { startVictoriaMetrics } from './victoria-metrics.ts';

/**
 * make bench-ingest: first the per-row cost of parsing on one core (parse-rows.ts). Then, to
 * a real api and ingest: 1M points as JSON (bodies of 10k, 4 at a time), BENCH_POINTS as one
 * 2-column CSV file, and BENCH_POINTS over 1,000 metrics as one file in the download layout
 * (per-row names), written metric-major (as /download writes it) and again time-major (every metric
 * at one timestamp, then the next, as a historian export or a scrape snapshot writes it); for
 * each, points/s from first request to all queryable (ack latency and freshness percentiles for
 * JSON), CPU per process, and peak RSS; for the two download-layout files, the point batches each
 * log partition got (from the ingest worker's log). In the same run, against two references:
 * the download layout's rows inserted straight into ClickHouse (one TabSeparated stream over
 * HTTP), and the same points imported into VictoriaMetrics (its CSV import, then polled until
 * a query counts them all). Then the api's memory while it receives a 1 GB file.
 *   BENCH_POINTS=10000000           the 2-column file, the download-layout files, ClickHouse and VictoriaMetrics
 *   BENCH_JSON_POINTS=1000000       the JSON bodies
 *   BENCH_CSV_POINTS                the 2-column file alone (default BENCH_POINTS)
 *   BENCH_BIG_FILE_BYTES=1073741824 the api memory case
 *   BENCH_PARSE_ROWS=2000000        the per-row cost case
 *   BENCH_POINTS=1000000 make bench-ingest   (a quicker run)
 *   BENCH_POINTS=2000000 make bench-ingest-json   (BENCH_ONLY=json: the baseline of BENCH_POINTS rows and the JSON case alone)
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 10_000_000);
const JSON_POINTS = Number(process.env.BENCH_JSON_POINTS ?? 1_000_000);
const CSV_POINTS = Number(process.env.BENCH_CSV_POINTS ?? POINTS);
const PER_BODY = 10_000;
const CONCURRENCY = 4;
const METRICS = 100;
const DOWNLOAD_METRICS = 1000;
const BIG_FILE_BYTES = Number(process.env.BENCH_BIG_FILE_BYTES ?? 1024 ** 3);
const T0 = Date.UTC(2024, 0, 1);
/** BENCH_ONLY=json (make bench-ingest-json): the ClickHouse baseline and the JSON case, nothing else. */
const ONLY_JSON = process.env.BENCH_ONLY === 'json';
// No rate limit: the bench follows every pending task by polling it, which is not what is measured.
const { settings, base } = await benchApi({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
const csvFile = join(tmpdir(), `meridian-bench-${process.pid}.csv`);
const tsvFile = join(tmpdir(), `meridian-bench-${process.pid}.tsv`);
const downloadFile = join(tmpdir(), `meridian-bench-${process.pid}.download.csv`);
const timeMajorFile = join(tmpdir(), `meridian-bench-${process.pid}.time-major.csv`);
const peerFile = join(tmpdir(), `meridian-bench-${process.pid}.peer.csv`);

async function chCount(): Promise<number> {
  const res = await fetch(clickhouseUrl(settings, { database: settings.CLICKHOUSE_DATABASE, query: 'SELECT count() FROM points' }));
  return Number((await res.text()).trim());
}

async function chCommand(sql: string): Promise<void> {
  const res = await fetch(clickhouseUrl(settings, { database: settings.CLICKHOUSE_DATABASE }), { method: 'POST', body: sql });
  if (!res.ok) throw new Error(`${sql}: ${await res.text()}`);
}

type Task = { status: string; updated_at: string; progress: { rows_total: number | null } };
/** The task as it is; with `waitSeconds`, a long-poll answered the moment it ends (or after that long). */
async function task(key: string, id: string, waitSeconds = 0): Promise<Task> {
  return (await (
    await fetch(`${base}/api/v1/tasks/${id}${waitSeconds > 0 ? `?wait=${waitSeconds}` : ''}`, { headers: { Authorization: `Bearer ${key}` } })
  ).json()) as Task;
}

async function main(): Promise<void> {
  if (!ONLY_JSON) await benchParseRows();
  try {
    await endToEnd();
  } finally {
    for (const f of [csvFile, tsvFile, downloadFile, timeMajorFile, peerFile]) rmSync(f, { force: true });
  }
}

async function endToEnd(): Promise<void> {
  // The download layout's points, for Meridian (as /download writes them) and for the peer
  // (RFC 3339 times, no header): written before any clock starts.
  const perMetric = Math.ceil(POINTS / DOWNLOAD_METRICS);
  let peerMs = NaN;
  if (!ONLY_JSON) {
    await pipeline(downloadPoints(POINTS, DOWNLOAD_METRICS, T0), createWriteStream(downloadFile));
    await pipeline(downloadPoints(POINTS, DOWNLOAD_METRICS, T0, { timeMajor: true }), createWriteStream(timeMajorFile));
    await pipeline(downloadPoints(POINTS, DOWNLOAD_METRICS, T0, { zulu: true, header: false }), createWriteStream(peerFile));
    const vm = await startVictoriaMetrics();
    try {
      peerMs = await vm.importDownloadCsv(peerFile, POINTS, T0 + (perMetric - 1) * 1000, (perMetric - 1) * 1000);
    } finally {
      await vm.stop();
    }
  }

  const api = startProcess('apps/api/src/main.ts', settings);
  // The worker logs at info, read here: each upload's line 'upload written to the log' says how
  // many point batches each partition got. Its warnings and errors still reach the terminal.
  const batchesOf = new Map<string, number[]>();
  const ingest = startProcess('apps/ingest/src/main.ts', settings, { LOG_LEVEL: 'info' }, undefined, (line) => {
    let entry: { level?: string; msg?: string; task_id?: string; offsets?: Record<string, { batches: number }> };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return void process.stdout.write(`${line}\n`);
    }
    if (entry.msg === 'upload written to the log' && entry.task_id && entry.offsets)
      batchesOf.set(
        entry.task_id,
        Object.values(entry.offsets).map((o) => o.batches),
      );
    else if (entry.level !== 'info' && entry.level !== 'debug' && entry.level !== 'trace') process.stderr.write(`${line}\n`);
  });
  const processes = [{ name: 'api', cpuSeconds: api.cpuSeconds }, { name: 'ingest', cpuSeconds: ingest.cpuSeconds }, ...stackProcesses()];
  try {
    const key = await readyAdminKey(settings, base);
    const auth = { Authorization: `Bearer ${key}` };

    // 0. Baseline, first, on a quiet machine: the same number of rows straight into ClickHouse as
    // one TabSeparated stream (as fast as Native here, measured), into a scratch table shaped
    // like points. Measured after the ingest phases it would compete with their merges.
    const baselineRows = POINTS;
    await pipeline(
      Readable.from(
        (function* () {
          for (let i = 0; i < baselineRows;) {
            const lines: string[] = [];
            for (let k = 0; k < 50_000 && i < baselineRows; k++, i++)
              lines.push(
                `bench.download.m${String(Math.floor(i / perMetric)).padStart(4, '0')}\t${T0 + (i % perMetric) * 1000}\t${(i % 1000) / 8}\t${T0}\tdirect\t0\t${i >> 16}\t${i & 0xffff}`,
              );
            yield `${lines.join('\n')}\n`;
          }
        })(),
      ),
      createWriteStream(tsvFile),
    );
    await chCommand('CREATE TABLE baseline AS points');
    const directSplit = cpuSplit(processes);
    const directStarted = performance.now();
    const insert = await postStream(
      clickhouseUrl(settings, { database: settings.CLICKHOUSE_DATABASE, query: 'INSERT INTO baseline FORMAT TabSeparated' }),
      {},
      fileStream(tsvFile),
    );
    if (insert.status !== 200) throw new Error(`direct insert: ${insert.text}`);
    const directMs = performance.now() - directStarted;
    const directCpu = directSplit.end();
    await chCommand('DROP TABLE baseline');

    // 1. JSON bodies of 10k points, CONCURRENCY producers back to back (json-uploads.ts).
    const cpuBefore = [api.cpuSeconds(), ingest.cpuSeconds()];
    const jsonSplit = cpuSplit(processes);
    const json = await benchJsonUploads({ base, key, points: JSON_POINTS, perBody: PER_BODY, producers: CONCURRENCY, metrics: METRICS, t0: T0 });
    const [apiCpu, ingestCpu] = [api.cpuSeconds() - cpuBefore[0]!, ingest.cpuSeconds() - cpuBefore[1]!];
    const jsonCpu = jsonSplit.end();
    const cpuLine = `CPU: api ${apiCpu.toFixed(1)} s, ingest ${ingestCpu.toFixed(1)} s (${fmt(JSON_POINTS / (apiCpu + ingestCpu))} points per CPU-second of the two; Kafka, ClickHouse and MinIO not counted)`;
    if ((await chCount()) !== JSON_POINTS) throw new Error('row count mismatch after the JSON uploads');
    const directRate = (baselineRows * 1000) / directMs;
    // ClickHouse's own CPU for the straight insert: the others' during it is other work.
    const directPerCpu = baselineRows / directCpu.of('clickhouse');
    /** Points per CPU-second of every process in a case, against ClickHouse's rows per CPU-second of its own insert: steadier than wall time on a busy machine. */
    const perCpu = (points: number, spent: CpuSpent) =>
      Number.isFinite(directPerCpu)
        ? `${spent.line}; ${fmt(points / spent.total)} points per CPU-second in all, ${(points / spent.total / directPerCpu).toFixed(2)}× ClickHouse's own insert per CPU-second`
        : `${spent.line} (the stack's processes are not local: no per-CPU ratio)`;
    const jsonLines = jsonFigureLines(json, JSON_POINTS, directRate);
    if (ONLY_JSON) {
      console.log(`\nbench-ingest, JSON only (${JSON_POINTS.toLocaleString('en')} points in bodies of ${PER_BODY}, ${CONCURRENCY} producers back to back)`);
      console.log(`  JSON:          ${jsonLines[0]}`);
      console.log(`                 ${jsonLines[1]}`);
      console.log(`                 ${cpuLine}`);
      console.log(`                 ${perCpu(JSON_POINTS, jsonCpu)}`);
      console.log(
        `  reference, straight TabSeparated insert into ClickHouse of ${baselineRows.toLocaleString('en')} rows, before the rest: ${fmt(directRate)} rows/s (${(directMs / 1000).toFixed(1)} s)`,
      );
      console.log(`  peak RSS: api ${api.peakRssMb()} MB, ingest ${ingest.peakRssMb()} MB`);
      return;
    }

    // 2. One CSV file of CSV_POINTS points, streamed from disk: written before the clock starts,
    // as the baseline's rows are, so neither side times this process formatting text.
    await pipeline(csvPoints(0, CSV_POINTS, T0), createWriteStream(csvFile));
    /**
     * Streams a file from disk as one upload and waits until its task succeeded: the time to the
     * 202, to the worker's commit (the task then knows its rows_total; what follows is the
     * projector's share; polled every 200 ms) and to all queryable (a long-poll, answered the
     * moment the task ends, as the JSON case follows its tasks: a poll would add up to its
     * interval to every case, and the references are timed to the end of their own request).
     */
    const uploadFile = async (what: string, query: string, file: string) => {
      const split = cpuSplit(processes);
      const started = performance.now();
      // The raw body is the file (the route takes a non-multipart body as the file itself).
      const res = await postStream(`${base}/api/v1/metrics_file_upload${query}`, auth, fileStream(file));
      if (res.status !== 202) throw new Error(`${what} upload: ${res.status} ${res.text}`);
      const ackMs = performance.now() - started;
      const taskId = (JSON.parse(res.text) as { task_id: string }).task_id;
      let loggedMs = 0;
      let doneMs = 0;
      let settled = false;
      const ended = (async () => {
        for (const deadline = Date.now() + 1_800_000; Date.now() < deadline;) {
          const t = await task(key, taskId, 30);
          if (t.status === 'failed') throw new Error(`${what} task failed`);
          if (t.status === 'succeeded') return void (doneMs = performance.now() - started);
        }
        throw new Error(`timed out waiting for the ${what} upload to succeed`);
      })().finally(() => (settled = true));
      ended.catch(() => undefined); // thrown by the await below, once the poll has stopped
      await waitUntil(
        `the ${what} upload to reach the log`,
        async () => {
          if (settled) return true; // ended (its rows_total known) before the 200 ms poll saw it logged
          if ((await task(key, taskId)).progress.rows_total === null) return undefined;
          loggedMs = performance.now() - started;
          return true;
        },
        1_800_000,
        200,
      );
      await ended;
      return { ackMs, loggedMs: loggedMs || doneMs, doneMs, cpu: split.end(), taskId };
    };
    const { ackMs: csvAck, loggedMs: csvLogged, doneMs: csvMs, cpu: csvCpu } = await uploadFile('CSV', '?metric_name=bench.csv', csvFile);
    if ((await chCount()) !== JSON_POINTS + CSV_POINTS) throw new Error('row count mismatch after the CSV upload');

    // 3. One file in the download layout: BENCH_POINTS points over 1,000 metrics, a name on every row.
    const {
      ackMs: downloadAck,
      loggedMs: downloadLogged,
      doneMs: downloadMs,
      cpu: downloadCpu,
      taskId: downloadTask,
    } = await uploadFile('download-layout', '', downloadFile);
    if ((await chCount()) !== JSON_POINTS + CSV_POINTS + POINTS) throw new Error('row count mismatch after the download-layout upload');

    // 3b. The same points written time-major, other names' rows between each name's: how a
    // file's row order weighs on the batches and the rate. Its points are the metric-major
    // file's (same names, times, values), so each is written again: the same rows, twice.
    const timeMajor = await uploadFile('time-major', '', timeMajorFile);
    if ((await chCount()) !== JSON_POINTS + CSV_POINTS + 2 * POINTS) throw new Error('row count mismatch after the time-major upload');

    // 4. The api receiving a 1 GB file: its resident memory while it streams the bytes to
    // storage. The rows are not points (the task fails on them at once), so ingest stays idle.
    const before1g = api.rssMb();
    api.mark();
    const chunk = Buffer.from('not,a point\n'.repeat(87_382)); // ~1 MiB
    const chunks = Math.ceil(BIG_FILE_BYTES / chunk.length);
    const bigStarted = performance.now();
    const big = await postStream(
      `${base}/api/v1/metrics_file_upload?metric_name=bench.big`,
      auth,
      Readable.from(
        (function* () {
          for (let i = 0; i < chunks; i++) yield chunk;
        })(),
      ),
    );
    if (big.status !== 202) throw new Error(`1 GB upload: ${big.status} ${big.text}`);
    const bigMs = performance.now() - bigStarted;
    const bigPeak = api.windowPeakMb();

    const csvRate = (CSV_POINTS * 1000) / csvMs;
    const downloadRate = (POINTS * 1000) / downloadMs;
    const peerRate = (POINTS * 1000) / peerMs;
    const ratios = (rate: number) => `${(rate / directRate).toFixed(2)}× ClickHouse, ${(rate / peerRate).toFixed(2)}× VictoriaMetrics`;
    console.log(
      `\nbench-ingest (${JSON_POINTS.toLocaleString('en')} JSON points in bodies of ${PER_BODY}, ${CONCURRENCY} at a time; ${CSV_POINTS.toLocaleString('en')} points in one 2-column file; ${POINTS.toLocaleString('en')} over ${DOWNLOAD_METRICS} metrics in one download-layout file)`,
    );
    console.log(`  JSON:          ${jsonLines[0]}; ${((JSON_POINTS * 1000) / json.ms / peerRate).toFixed(2)}× VictoriaMetrics`);
    console.log(`                 ${jsonLines[1]}`);
    console.log(`                 ${cpuLine}`);
    console.log(`                 ${perCpu(JSON_POINTS, jsonCpu)}`);
    console.log(
      `  2-column CSV:  ${fmt(csvRate)} points/s first byte → all queryable (${(csvMs / 1000).toFixed(1)} s; acked after ${(csvAck / 1000).toFixed(1)} s, in the log after ${(csvLogged / 1000).toFixed(1)} s): ${ratios(csvRate)}`,
    );
    console.log(`                 ${perCpu(CSV_POINTS, csvCpu)}`);
    console.log(
      `  download CSV:  ${fmt(downloadRate)} points/s first byte → all queryable (${(downloadMs / 1000).toFixed(1)} s; acked after ${(downloadAck / 1000).toFixed(1)} s, in the log after ${(downloadLogged / 1000).toFixed(1)} s): ${ratios(downloadRate)} (goals 0.5×, 0.3×)`,
    );
    console.log(`                 ${perCpu(POINTS, downloadCpu)}`);
    console.log(`  the download layout, by row order (${POINTS.toLocaleString('en')} points over ${DOWNLOAD_METRICS} metrics):`);
    console.log('  | written | points/s until queryable | CPU-s per 1M points: all (per process) | point batches per partition |');
    console.log('  |---|---|---|---|');
    const layoutRow = (what: string, ms: number, cpu: CpuSpent, taskId: string) => {
      const perMillion = (s: number) => ((s * 1e6) / POINTS).toFixed(2);
      const perProcess = processes.map((p) => `${p.name} ${perMillion(cpu.of(p.name))}`).join(', ');
      const batches = batchesOf.get(taskId);
      const perPartition = batches?.length ? `${Math.min(...batches)}–${Math.max(...batches)} over ${batches.length} partitions` : 'not in the ingest log';
      console.log(`  | ${what} | ${fmt((POINTS * 1000) / ms)} | ${perMillion(cpu.total)}: ${perProcess} | ${perPartition} |`);
    };
    layoutRow('metric-major', downloadMs, downloadCpu, downloadTask);
    layoutRow('time-major', timeMajor.doneMs, timeMajor.cpu, timeMajor.taskId);
    console.log(
      `  reference, straight TabSeparated insert into ClickHouse of the download layout's rows, before the rest: ${fmt(directRate)} rows/s (${(directMs / 1000).toFixed(1)} s)`,
    );
    console.log(`                 ${directCpu.line}: ${fmt(directPerCpu)} rows per CPU-second of ClickHouse`);
    console.log(
      `  reference, VictoriaMetrics' CSV import of the same points until a query counts them all, before the rest: ${fmt(peerRate)} points/s (${(peerMs / 1000).toFixed(1)} s)`,
    );
    console.log(`  peak RSS: api ${api.peakRssMb()} MB, ingest ${ingest.peakRssMb()} MB`);
    console.log(
      `  api receiving a ${((chunks * chunk.length) / 1024 ** 3).toFixed(2)} GB file: ${fmt((chunks * chunk.length) / 1024 ** 2 / (bigMs / 1000))} MB/s, RSS ${before1g} MB before, at most ${bigPeak} MB during (goal < 300 MB)`,
    );
  } finally {
    await Promise.all([api.stop(), ingest.stop()]);
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
