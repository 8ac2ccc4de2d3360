import { createWriteStream, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBlobStore } from '@meridian/storage';
import {
  benchApi,
  cpuSplit,
  dropBenchScope,
  downloadPoints,
  fileStream,
  fmt,
  postStream,
  repoRoot,
  stackProcesses,
  startProcess,
  readyAdminKey,
} from './common.ts';

/**
 * make bench-receive: the api alone receiving file uploads, first byte to 202 (the claim check:
 * the whole file staged in the bucket). One file of BENCH_POINTS points over 1,000 metrics in
 * the download layout, streamed from disk, and a generated body of BENCH_BIG_FILE_BYTES, each
 * BENCH_RUNS times: MB/s, the api's RSS, the load average, and the CPU seconds of the api,
 * MinIO and this process (the client). No ingest runs: its work is not what is measured.
 * BENCH_API_ROOTS (checkouts, comma-separated, each with optional `+NAME=value` settings; this
 * one by default) runs each api in turn within every run: a comparison on the same shared
 * machine, minutes apart at most.
 *   BENCH_POINTS=10000000 BENCH_BIG_FILE_BYTES=1073741824 BENCH_RUNS=3 make bench-receive
 *   BENCH_API_ROOTS=../other-checkout,.,.+MERIDIAN_STORAGE_PARTS_IN_FLIGHT=1 make bench-receive
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 10_000_000);
const BIG_FILE_BYTES = Number(process.env.BENCH_BIG_FILE_BYTES ?? 1024 ** 3);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const API_ROOTS = (process.env.BENCH_API_ROOTS ?? repoRoot).split(',').map((entry) => {
  const [root, ...env] = entry.split('+');
  return { root: `${resolve(root!)}/`, env: Object.fromEntries(env.map((e) => e.split('=') as [string, string])), name: entry };
});
const { settings } = await benchApi({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
const downloadFile = join(tmpdir(), `meridian-bench-${process.pid}.receive.csv`);
const T0 = Date.UTC(2024, 0, 1);

const clientCpu = {
  name: 'client',
  cpuSeconds: () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  },
};

async function main(): Promise<void> {
  await pipeline(downloadPoints(POINTS, 1000, T0), createWriteStream(downloadFile));
  const fileBytes = statSync(downloadFile).size;
  const chunk = Buffer.from('not,a point\n'.repeat(87_382)); // ~1 MiB
  const chunks = Math.ceil(BIG_FILE_BYTES / chunk.length);
  const blobs = createBlobStore({
    endpoint: settings.S3_ENDPOINT,
    accessKey: settings.S3_ACCESS_KEY,
    secretKey: settings.S3_SECRET_KEY,
    region: settings.S3_REGION,
    bucket: settings.S3_BUCKET,
  });
  console.log(
    `bench-receive (${POINTS.toLocaleString('en')} points in the download layout, ${fmt(fileBytes / 1024 ** 2)} MB; ${((chunks * chunk.length) / 1024 ** 3).toFixed(2)} GB generated; api of ${API_ROOTS.map((r) => r.name).join(' and ')})`,
  );
  let auth: Record<string, string> | null = null;
  try {
    for (let run = 1; run <= RUNS; run++) {
      for (const { root, env, name } of API_ROOTS) {
        const port = 18_500 + Math.floor(Math.random() * 400);
        const base = `http://127.0.0.1:${port}`;
        const api = startProcess('apps/api/src/main.ts', { ...settings, MERIDIAN_API_PORT: port }, env, root);
        const processes = [{ name: 'api', cpuSeconds: api.cpuSeconds }, ...stackProcesses().filter((p) => p.name === 'minio'), clientCpu];
        try {
          auth ??= { Authorization: `Bearer ${await readyAdminKey(settings, base)}` };
          /** Sends one body as a file upload and times it to the 202; the staged object is removed after, so runs do not fill the disk. */
          const receive = async (what: string, query: string, bytes: number, body: () => Readable) => {
            api.mark();
            const split = cpuSplit(processes);
            const load = loadavg()[0]!.toFixed(2);
            const started = performance.now();
            const { status } = await postStream(`${base}/api/v1/metrics_file_upload${query}`, { ...auth!, 'Content-Type': 'text/csv' }, body());
            if (status !== 202) throw new Error(`${what}: ${status}`);
            const ms = performance.now() - started;
            const cpu = split.end();
            console.log(
              `  run ${run}, ${name}: ${what}: acked after ${(ms / 1000).toFixed(2)} s, ${fmt(bytes / 1024 ** 2 / (ms / 1000))} MB/s, api RSS at most ${api.windowPeakMb()} MB (load ${load}); ${cpu.line}; ${fmt(bytes / 1024 ** 2 / cpu.of('api'))} MB per api CPU-second`,
            );
            for (const { key } of await blobs.list('staging/')) await blobs.remove(key);
          };
          await receive('download-layout file', '', fileBytes, () => fileStream(downloadFile));
          await receive('generated body', '?metric_name=bench.big', chunks * chunk.length, () =>
            Readable.from(
              (function* () {
                for (let i = 0; i < chunks; i++) yield chunk;
              })(),
            ),
          );
        } finally {
          await api.stop();
        }
      }
    }
  } finally {
    rmSync(downloadFile, { force: true });
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
