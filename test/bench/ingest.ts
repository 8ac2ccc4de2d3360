import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { formatTimestamp } from '@meridian/domain';
import { adminKey, benchApi, csvPoints, fmt, percentile, startProcess, waitUntil } from './common.ts';

/**
 * make bench-ingest: uploads 1M points as JSON (bodies of 10k) and 10M as one CSV file to a
 * real api and ingest, and reports points/s from first request to all queryable, ack
 * latency and freshness percentiles, and peak RSS — against the same rows inserted straight
 * into ClickHouse (one TabSeparated stream over HTTP) in the same run.
 * Then the api's memory while it receives a 1 GB file (BENCH_BIG_FILE_BYTES).
 *   BENCH_JSON_POINTS=1000000 BENCH_CSV_POINTS=10000000 make bench-ingest
 */
const JSON_POINTS = Number(process.env.BENCH_JSON_POINTS ?? 1_000_000);
const CSV_POINTS = Number(process.env.BENCH_CSV_POINTS ?? 10_000_000);
const PER_BODY = 10_000;
const CONCURRENCY = 4;
const METRICS = 100;
const BIG_FILE_BYTES = Number(process.env.BENCH_BIG_FILE_BYTES ?? 1024 ** 3);
const T0 = Date.UTC(2024, 0, 1);
const { settings, base } = benchApi();
const csvFile = join(tmpdir(), `meridian-bench-${process.pid}.csv`);
const tsvFile = join(tmpdir(), `meridian-bench-${process.pid}.tsv`);

async function chCount(): Promise<number> {
  const res = await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=SELECT%20count()%20FROM%20points`);
  return Number((await res.text()).trim());
}

async function chCommand(sql: string): Promise<void> {
  const res = await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}`, { method: 'POST', body: sql });
  if (!res.ok) throw new Error(`${sql}: ${await res.text()}`);
}

type Task = { status: string; updated_at: string; progress: { rows_total: number | null } };
async function task(key: string, id: string): Promise<Task> {
  return (await (await fetch(`${base}/api/v1/tasks/${id}`, { headers: { Authorization: `Bearer ${key}` } })).json()) as Task;
}

async function main(): Promise<void> {
  const api = startProcess('apps/api/src/main.ts', settings);
  const ingest = startProcess('apps/ingest/src/main.ts', settings);
  try {
    await waitUntil('the api', async () => ((await fetch(`${base}/readyz`)).ok ? true : undefined), 120_000, 250);
    const key = await adminKey(settings);
    const auth = { Authorization: `Bearer ${key}` };

    // 0. Baseline, first, on a quiet machine: the same number of rows straight into ClickHouse as
    // one TabSeparated stream (as fast as Native here, measured), into a scratch table shaped
    // like points. Measured after the ingest phases it would compete with their merges.
    const baselineRows = CSV_POINTS;
    await pipeline(Readable.from((function* () {
      for (let i = 0; i < baselineRows;) {
        const lines: string[] = [];
        for (let k = 0; k < 50_000 && i < baselineRows; k++, i++) lines.push(`bench.direct\t${T0 + i * 1000}\t${(i % 1000) / 8}\t${T0}\tdirect\t0\t${i >> 16}\t${i & 0xffff}`);
        yield `${lines.join('\n')}\n`;
      }
    })()), createWriteStream(tsvFile));
    await chCommand('CREATE TABLE baseline AS points');
    const directStarted = performance.now();
    const insert = await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent('INSERT INTO baseline FORMAT TabSeparated')}`, { method: 'POST', body: Readable.toWeb(createReadStream(tsvFile)) as never, duplex: 'half' });
    if (!insert.ok) throw new Error(`direct insert: ${await insert.text()}`);
    const directMs = performance.now() - directStarted;
    await chCommand('DROP TABLE baseline');

    // 1. JSON bodies of 10k points, CONCURRENCY at a time.
    // The bodies are built before the clock starts, as the CSV file is: the client's own
    // formatting would otherwise take CPU from the api and ingest on this 2-core machine.
    const bodies = Array.from({ length: JSON_POINTS / PER_BODY }, (_, b) => JSON.stringify({
      metric_name: `bench.json.${b % METRICS}`,
      values: Array.from({ length: PER_BODY }, (_, k) => ({ timestamp: formatTimestamp(T0 + (b * PER_BODY + k) * 1000), value: k / 4 })),
    }));
    const acks: number[] = [];
    const accepted: Array<{ id: string; ackAt: number }> = [];
    const started = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const b = next++;
        const t = performance.now();
        const res = await fetch(`${base}/api/v1/metrics/upload`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: bodies[b] });
        if (res.status !== 202) throw new Error(`upload ${b}: ${res.status} ${await res.text()}`);
        acks.push(performance.now() - t);
        accepted.push({ id: ((await res.json()) as { task_id: string }).task_id, ackAt: performance.now() });
      }
    }));
    const freshness: number[] = [];
    const pending = new Set(accepted.map((a) => a.id));
    await waitUntil('every JSON upload to succeed', async () => {
      for (const a of accepted) {
        if (!pending.has(a.id)) continue;
        const t = await task(key, a.id);
        if (t.status === 'failed') throw new Error(`task ${a.id} failed`);
        if (t.status === 'succeeded') {
          pending.delete(a.id);
          freshness.push(performance.now() - a.ackAt);
        }
      }
      return pending.size === 0 ? true : undefined;
    }, 600_000, 50);
    const jsonMs = performance.now() - started;
    if ((await chCount()) !== JSON_POINTS) throw new Error('row count mismatch after the JSON uploads');

    // 2. One CSV file of CSV_POINTS points, streamed from disk: written before the clock starts,
    // as the baseline's rows are, so neither side times this process formatting text.
    await pipeline(csvPoints(0, CSV_POINTS, T0), createWriteStream(csvFile));
    const csvStarted = performance.now();
    // The raw body is the file (the route takes a non-multipart body as the file itself).
    const res = await fetch(`${base}/api/v1/metrics_file_upload?metric_name=bench.csv`, { method: 'POST', headers: auth, body: Readable.toWeb(createReadStream(csvFile)) as never, duplex: 'half' });
    if (res.status !== 202) throw new Error(`csv upload: ${res.status} ${await res.text()}`);
    const csvAck = performance.now() - csvStarted;
    const csvTask = ((await res.json()) as { task_id: string }).task_id;
    // The task knows its rows_total once the worker's transaction is committed: what comes
    // after that is the projector's share.
    let csvLogged = 0;
    await waitUntil('the CSV upload to succeed', async () => {
      const t = await task(key, csvTask);
      if (csvLogged === 0 && t.progress.rows_total !== null) csvLogged = performance.now() - csvStarted;
      if (t.status === 'failed') throw new Error('csv task failed');
      return t.status === 'succeeded' ? true : undefined;
    }, 1_800_000, 200);
    const csvMs = performance.now() - csvStarted;
    if ((await chCount()) !== JSON_POINTS + CSV_POINTS) throw new Error('row count mismatch after the CSV upload');

    // 3. The api receiving a 1 GB file: its resident memory while it streams the bytes to
    // storage. The rows are not points (the task fails on them at once), so ingest stays idle.
    const before1g = api.rssMb();
    api.mark();
    const chunk = Buffer.from('not,a point\n'.repeat(87_382)); // ~1 MiB
    const chunks = Math.ceil(BIG_FILE_BYTES / chunk.length);
    const bigStarted = performance.now();
    const big = await fetch(`${base}/api/v1/metrics_file_upload?metric_name=bench.big`, {
      method: 'POST', headers: auth, duplex: 'half', body: Readable.toWeb(Readable.from((function* () { for (let i = 0; i < chunks; i++) yield chunk; })())) as never,
    });
    if (big.status !== 202) throw new Error(`1 GB upload: ${big.status} ${await big.text()}`);
    const bigMs = performance.now() - bigStarted;
    const bigPeak = api.windowPeakMb();

    acks.sort((a, b) => a - b);
    freshness.sort((a, b) => a - b);
    const jsonRate = (JSON_POINTS * 1000) / jsonMs;
    const csvRate = (CSV_POINTS * 1000) / csvMs;
    const directRate = (baselineRows * 1000) / directMs;
    console.log(`\nbench-ingest (${JSON_POINTS.toLocaleString('en')} JSON points in bodies of ${PER_BODY}, ${CONCURRENCY} at a time; ${CSV_POINTS.toLocaleString('en')} CSV points in one file)`);
    console.log(`  JSON: ${fmt(jsonRate)} points/s first request → all queryable (${(jsonMs / 1000).toFixed(1)} s)`);
    console.log(`        ack latency p50 ${percentile(acks, 50).toFixed(0)} ms, p99 ${percentile(acks, 99).toFixed(0)} ms; freshness (ack → queryable) p50 ${percentile(freshness, 50).toFixed(0)} ms, p99 ${percentile(freshness, 99).toFixed(0)} ms`);
    console.log(`  CSV:  ${fmt(csvRate)} points/s first byte → all queryable (${(csvMs / 1000).toFixed(1)} s; upload acked after ${(csvAck / 1000).toFixed(1)} s, parsed into the log after ${(csvLogged / 1000).toFixed(1)} s)`);
    console.log(`  baseline, straight TabSeparated insert into ClickHouse before the rest: ${fmt(directRate)} rows/s (${(directMs / 1000).toFixed(1)} s)`);
    console.log(`  ratio ingest/baseline: JSON ${(jsonRate / directRate).toFixed(2)}, CSV ${(csvRate / directRate).toFixed(2)}`);
    console.log(`  peak RSS: api ${api.peakRssMb()} MB, ingest ${ingest.peakRssMb()} MB`);
    console.log(`  api receiving a ${(chunks * chunk.length / 1024 ** 3).toFixed(2)} GB file: ${fmt((chunks * chunk.length) / 1024 ** 2 / (bigMs / 1000))} MB/s, RSS ${before1g} MB before, at most ${bigPeak} MB during (goal < 300 MB)`);
  } finally {
    await Promise.all([api.stop(), ingest.stop()]);
    for (const f of [csvFile, tsvFile]) rmSync(f, { force: true });
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
