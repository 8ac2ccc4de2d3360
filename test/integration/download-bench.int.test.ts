import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickHouse, ensureDatabase, migrate, planDownload, streamDownload, type DownloadRequest } from '@meridian/clickhouse';
import { externalTableParams, tsvRows } from '../../libs/clickhouse/src/download/external-data.ts';
import { filterSql } from '../../libs/clickhouse/src/download/filter-sql.ts';
import { streamSql } from '../../libs/clickhouse/src/download/query-sql.ts';
import { csvLineSql } from '../../libs/clickhouse/src/download/row-sql.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * Download throughput on 10M synthetic rows over 1,000 metrics: our stream against the same
 * SQL fetched straight with curl, and the alternatives the design was chosen against.
 * Opt-in (about two minutes a round): DOWNLOAD_BENCH=1 npx vitest run --project integration
 * test/integration/download-bench.int.test.ts. DOWNLOAD_BENCH_DATABASE names the database
 * (dropped afterwards); DOWNLOAD_BENCH_ROWS changes the row count; each figure is the best of
 * DOWNLOAD_BENCH_REPEAT runs (default 3), interleaved, because a shared machine is noisy.
 */

const ROWS = Number(process.env.DOWNLOAD_BENCH_ROWS ?? 10_000_000);
const METRICS = 1000;
const T = 1_600_000_000_000;
const REPEAT = Number(process.env.DOWNLOAD_BENCH_REPEAT ?? 3);

type Result = { seconds: number; ttfb: number; bytes: number };

describe.skipIf(!process.env.DOWNLOAD_BENCH)('download throughput (opt-in bench)', () => {
  const settings = isolatedSettings(process.env.DOWNLOAD_BENCH_DATABASE ? { CLICKHOUSE_DATABASE: process.env.DOWNLOAD_BENCH_DATABASE } : {});
  const conn = { url: settings.CLICKHOUSE_URL, username: settings.CLICKHOUSE_USER, password: settings.CLICKHOUSE_PASSWORD, database: settings.CLICKHOUSE_DATABASE };
  const client = createClickHouse(conn);
  const names = Array.from({ length: METRICS }, (_, i) => `bench.metric:${i}`);
  const dir = mkdtempSync(join(tmpdir(), 'download-bench-'));
  const results = new Map<string, Result[]>();

  beforeAll(async () => {
    await ensureDatabase(conn);
    await migrate(client);
    // Interleaved metrics and some ms timestamps, in several parts, as uploads over time make them.
    await client.command({
      query: `INSERT INTO points SELECT concat('bench.metric:', toString(number % ${METRICS})) AS metric_name,
              ${T} + intDiv(number, ${METRICS}) * 60000 + (number % 7) * 125 AS ts, (number % 1000003) / 7.0 AS value,
              ${T} + intDiv(number, ${METRICS}) * 60000 + 3600000 AS updated_at, 'task' AS task_id, toUInt16(number % 3) AS kafka_partition,
              intDiv(number, ${METRICS}) AS kafka_offset, toUInt32(number % ${METRICS}) AS row_in_batch FROM system.numbers LIMIT ${ROWS}`,
    });
  }, 600_000);

  afterAll(async () => {
    const lines = [...results].map(([what, runs]) => {
      const best = runs.reduce((a, b) => (b.seconds < a.seconds ? b : a));
      const median = [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor(runs.length / 2)]!;
      const rate = (r: Result) => Math.round(ROWS / r.seconds).toLocaleString('en').padStart(10);
      if (best.bytes < 1000) return // a plan or a page end: no rows to count `${what.padEnd(56)} best ${best.seconds.toFixed(2).padStart(6)} s | median ${median.seconds.toFixed(2).padStart(6)} s`;
      return `${what.padEnd(56)} best ${best.seconds.toFixed(2).padStart(6)} s ${rate(best)} rows/s ttfb ${best.ttfb.toFixed(2)} s | median ${median.seconds.toFixed(2).padStart(6)} s ${rate(median)} rows/s | ${(best.bytes / 1e6).toFixed(0)} MB`;
    });
    console.log(`\ndownload bench, ${ROWS} rows over ${METRICS} metrics, best and median of ${REPEAT}\n${lines.join('\n')}\n`);
    await client.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` });
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const request = (change: Partial<DownloadRequest> = {}): DownloadRequest => ({
    metricNames: names,
    fromMs: 0,
    toMs: 4_291_747_199_999,
    maxRows: ROWS,
    after: null,
    format: 'csv',
    latestOnly: false,
    gzip: false,
    queryId: randomUUID(),
    ...change,
  });

  const line = (what: string, seconds: number, ttfb: number, bytes: number) => {
    const runs = results.get(what) ?? [];
    runs.push({ seconds, ttfb, bytes });
    results.set(what, runs);
  };

  /** Plan + stream as the api does; the body is drained as fast as it comes. */
  async function viaStream(what: string, change: Partial<DownloadRequest> = {}): Promise<number> {
    const req = request(change);
    const t0 = performance.now();
    const plan = await planDownload(conn, req);
    const t1 = performance.now();
    const stream = await streamDownload(conn, req, { plan });
    let first = 0;
    let bytes = 0;
    for await (const chunk of stream.body as AsyncIterable<Buffer>) {
      first ||= performance.now();
      bytes += chunk.length;
    }
    const end = performance.now();
    line(`${what}, plan included`, (end - t0) / 1000, (first - t0) / 1000, bytes);
    line(`${what}: of which the plan`, (t1 - t0) / 1000, 0, 0);
    return bytes;
  }

  /** The given SQL and external tables, straight from ClickHouse with curl, its output counted as it arrives. */
  async function viaCurl(what: string, sql: string, tables: Parameters<typeof externalTableParams>[0]): Promise<number> {
    const params = new URLSearchParams([['query', sql], ['database', conn.database], ...externalTableParams(tables)]);
    const files = tables.flatMap((t) => {
      const file = join(dir, `${t.name}.tsv`);
      writeFileSync(file, tsvRows(t.rows));
      return ['-F', `${t.name}=@${file}`];
    });
    // Timed here, not with curl's -w: its time_starttransfer counts the multipart upload.
    const t0 = performance.now();
    const curl = spawn('curl', ['-sS', '--fail', '-o', '-', ...files, `${conn.url}/?${params}`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let first = 0;
    let bytes = 0;
    for await (const chunk of curl.stdout as AsyncIterable<Buffer>) {
      first ||= performance.now();
      bytes += chunk.length;
    }
    const code = await new Promise<number | null>((resolve) => (curl.exitCode !== null ? resolve(curl.exitCode) : curl.once('exit', resolve)));
    if (code !== 0) throw new Error(`curl exited with ${code}`);
    line(what, (performance.now() - t0) / 1000, (first - t0) / 1000, bytes);
    return bytes;
  }

  /** One query per group of metrics, in name order, bodies one after the other. */
  async function viaGroups(group: number): Promise<void> {
    const t0 = performance.now();
    let bytes = 0;
    let first = 0;
    const sorted = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    for (let i = 0; i < sorted.length; i += group) {
      const stream = await streamDownload(conn, request({ metricNames: sorted.slice(i, i + group) }), { plan: { next: null } });
      for await (const chunk of stream.body as AsyncIterable<Buffer>) {
        first ||= performance.now();
        bytes += chunk.length;
      }
    }
    line(`alt: one query per ${group} metrics in name order (no gzip)`, (performance.now() - t0) / 1000, (first - t0) / 1000, bytes);
  }

  /** The page end found by one ORDER BY ... LIMIT 1 OFFSET over all metrics, instead of planDownload's steps. */
  async function boundaryBySort(maxRows: number): Promise<void> {
    const filter = filterSql({ ...request(), until: null });
    const sql =
      `SELECT metric_name, ts, updated_at, kafka_partition, kafka_offset, row_in_batch FROM points WHERE ${filter.where} ` +
      `ORDER BY metric_name, ts, updated_at, kafka_partition, kafka_offset, row_in_batch LIMIT ${maxRows - 1}, 1 FORMAT TabSeparated`;
    await viaCurl(`alt: page end of ${maxRows} rows by one sort, curl`, sql, filter.tables);
  }

  async function plan(maxRows: number): Promise<void> {
    const t0 = performance.now();
    await planDownload(conn, request({ maxRows }));
    line(`planDownload of a ${maxRows}-row page`, (performance.now() - t0) / 1000, 0, 0);
  }

  it('measures every variant, round-robin', async () => {
    const filter = filterSql({ ...request(), until: null });
    const where = filter.where;
    const order = 'ts, updated_at, kafka_partition, kafka_offset, row_in_batch';
    for (let i = 0; i < REPEAT; i++) {
      const curlBytes = await viaCurl('CSV: the same SQL straight with curl', streamSql('csv', false, where, null), filter.tables);
      const streamBytes = await viaStream('CSV: planDownload + streamDownload');
      expect(streamBytes).toBe(curlBytes);
      await viaStream('CSV gzip', { gzip: true });
      await viaStream('JSON', { format: 'json' });
      await viaStream('CSV latestOnly', { latestOnly: true });
      await viaCurl('alt: unordered lines (no sort at all), curl', `SELECT ${csvLineSql()} FROM points WHERE ${where} FORMAT TabSeparatedRaw`, filter.tables);
      await viaCurl(
        'alt: ORDER BY metric_name (string), not rank, curl',
        `SELECT ${csvLineSql()} FROM points WHERE ${where} ORDER BY metric_name, ${order} FORMAT TabSeparatedRaw`,
        filter.tables,
      );
      await viaGroups(100);
      await plan(1000);
      await plan(100_000);
      await boundaryBySort(1000);
      await boundaryBySort(100_000);
    }
  }, 1_800_000);
});
