import { adapterOptions } from '@meridian/config';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { pipeline } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { createClickHouse, ensureDatabase, migrate, nativePointColumns, planDownload, streamDownload, type DownloadRequest } from '@meridian/clickhouse';
import { columnarBody } from '../../apps/api/src/downloads/columnar.ts';
import { releaseReadChunks } from '../../apps/api/src/http/release-memory.ts';
import { API_NODE_ENV, API_NODE_FLAGS } from '../../apps/api/src/node-flags.ts';
import { benchSettings, fmt } from './common.ts';

/**
 * Where an Arrow download's api memory goes, and whether freeing its buffers early bounds it:
 * the api's download path (plan, parts, Native decoding, the Arrow writer, an HTTP response read
 * by curl) in a process of its own with the api's V8 flags and environment, `process.memoryUsage()`
 * sampled every 10 ms over three downloads one after another. Two ways, alternating, each in a
 * new process: "held" leaves the buffers to V8 (the body without its response), "released" frees
 * the read chunks, the columns and the sent pieces as soon as they are done with.
 *   node test/bench/download-memory.ts            (BENCH_ROWS=10000000 BENCH_REPEAT=2)
 */
const ROWS = Number(process.env.BENCH_ROWS ?? 10_000_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 2);
const METRICS = 1000;
const DOWNLOADS = 3;
const T = 1_600_000_000_000;

type Sample = { rss: number; heapUsed: number; external: number; arrayBuffers: number };
type Report = { idle: Sample; downloads: Array<{ peak: Sample; seconds: number; bytes: number }> };

const mb = (n: number) => Math.round(n / 1e6);
const sample = (): Sample => {
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
};

/** The child: serve one page of every metric as Arrow, the way the route does, and download it DOWNLOADS times with curl. */
async function child(release: boolean): Promise<void> {
  const settings = JSON.parse(process.env.BENCH_SETTINGS!) as { url: string; username: string; password: string; database: string };
  const names = Array.from({ length: METRICS }, (_, i) => `bench.m${String(i).padStart(4, '0')}`);
  const server = createServer((_req, res) => {
    void (async () => {
      const req: DownloadRequest = {
        metricNames: names,
        fromMs: 0,
        toMs: 4_291_747_199_999,
        maxRows: ROWS,
        after: null,
        format: 'columns',
        latestOnly: false,
        gzip: false,
        batchRows: 65_536,
        queryId: randomUUID(),
      };
      const rowsOf = () => ROWS / METRICS;
      const plan = await planDownload(settings, req, { rowsOf });
      const stream = await streamDownload(settings, req, {
        plan,
        chunks: { rowsOf, sizes: { firstRows: 50_000, maxRows: Number(process.env.BENCH_PART_ROWS) } },
      });
      const body = stream.body as AsyncIterable<Buffer>;
      const batches = release ? nativePointColumns(body, stream.names, { consumed: releaseReadChunks }) : nativePointColumns(body, stream.names);
      pipeline(columnarBody('arrow', batches, release ? res : undefined), res, () => undefined); // curl's exit code tells a failure
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  await new Promise((resolve) => setTimeout(resolve, 500));
  const report: Report = { idle: sample(), downloads: [] };
  for (let d = 0; d < DOWNLOADS; d++) {
    const peak = sample();
    const timer = setInterval(() => {
      const s = sample();
      for (const k of Object.keys(s) as Array<keyof Sample>) peak[k] = Math.max(peak[k], s[k]);
    }, 10);
    const started = performance.now();
    const bytes = await new Promise<number>((resolve, reject) => {
      const curl = spawn('curl', ['-s', '-o', '/dev/null', '-w', '%{size_download}', url]);
      let out = '';
      curl.stdout.on('data', (b: Buffer) => (out += b.toString()));
      curl.once('error', reject);
      curl.once('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`curl exited ${code}`))));
    });
    clearInterval(timer);
    report.downloads.push({ peak, seconds: (performance.now() - started) / 1000, bytes });
  }
  console.log(JSON.stringify(report));
  server.close();
  process.exit(0);
}

async function main(): Promise<void> {
  const settings = benchSettings();
  const conn = adapterOptions(settings, 'bench-download-memory').clickhouse;
  const client = createClickHouse(conn);
  try {
    await ensureDatabase(conn);
    await migrate(client);
    await client.command({
      query: `INSERT INTO points SELECT concat('bench.m', substring(toString(10000 + number % ${METRICS}), 2)), ${T} + intDiv(number, ${METRICS}) * 60000,
                (number % 1000003) / 7.0, ${T}, 'bench', toUInt16(number % 3), intDiv(number, ${METRICS}), toUInt32(number % ${METRICS}) FROM system.numbers LIMIT ${ROWS}`,
    });
    console.log(`download-memory: ${fmt(ROWS)} rows over ${METRICS} metrics as Arrow, ${DOWNLOADS} downloads a process, flags ${API_NODE_FLAGS.join(' ')}`);
    for (let r = 0; r < REPEAT; r++) {
      for (const way of ['held', 'released']) {
        const load = loadavg()[0]!.toFixed(1);
        const out = execFileSync(process.execPath, [...API_NODE_FLAGS, new URL(import.meta.url).pathname, way], {
          encoding: 'utf8',
          env: {
            ...process.env,
            ...API_NODE_ENV,
            BENCH_SETTINGS: JSON.stringify(conn),
            BENCH_ROWS: String(ROWS),
            BENCH_PART_ROWS: String(settings.MERIDIAN_DOWNLOAD_PART_ROWS),
          },
          maxBuffer: 1 << 20,
        });
        const report = JSON.parse(out.trim().split('\n').at(-1)!) as Report;
        const { idle } = report;
        const each = report.downloads.map(
          (d) =>
            `${d.seconds.toFixed(1)} s, RSS +${mb(d.peak.rss - idle.rss)}, arrayBuffers ${mb(d.peak.arrayBuffers)}, external ${mb(d.peak.external)}, heap ${mb(d.peak.heapUsed)}`,
        );
        console.log(
          `  run ${r + 1} ${way.padEnd(8)} (load ${load}) idle RSS ${mb(idle.rss)} MB, arrayBuffers ${mb(idle.arrayBuffers)}; peaks (MB) by download: ${each.join(' | ')}`,
        );
      }
    }
  } finally {
    // Only a database was made: no topics or bucket to drop.
    await client.command({ query: `DROP DATABASE IF EXISTS ${conn.database}` });
    await client.close();
  }
}

const way = process.argv[2];
if (way === 'held' || way === 'released') await child(way === 'released');
else
  await main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
