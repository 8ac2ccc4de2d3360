import { Readable } from 'node:stream';
import { benchApi, csvPoints, dropBenchScope, fmt, meridian, startProcess, waitUntil, readyAdminKey } from './common.ts';

/**
 * make bench-replay: ingests BENCH_POINTS points through a real api and ingest (CSV file uploads
 * of BENCH_UPLOAD points, two at a time), measuring the live rate from the first request until
 * every point is queryable; then runs a full rebuild of the points projection with the real CLI
 * (`meridian replay rebuild points --json`) in the same run, and reports its events and points
 * per second and the ratio to the live ingest rate.
 *   BENCH_POINTS=2000000 BENCH_UPLOAD=100000 make bench-replay
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 2_000_000);
const PER_UPLOAD = Number(process.env.BENCH_UPLOAD ?? 100_000);
const CONCURRENCY = 2;
const METRICS = 20;
const T0 = Date.UTC(2024, 0, 1);
const { settings, base } = await benchApi();
async function main(): Promise<void> {
  const api = startProcess('apps/api/src/main.ts', settings);
  const ingest = startProcess('apps/ingest/src/main.ts', settings);
  try {
    const key = await readyAdminKey(settings, base);
    const auth = { Authorization: `Bearer ${key}` };

    // 1. Live: uploads through the api until every point is queryable.
    const uploads = Math.ceil(POINTS / PER_UPLOAD);
    const tasks: string[] = [];
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < uploads) {
          const u = next++;
          const count = Math.min(PER_UPLOAD, POINTS - u * PER_UPLOAD);
          const res = await fetch(`${base}/api/v1/metrics_file_upload?metric_name=bench.replay.${u % METRICS}`, {
            method: 'POST',
            headers: auth,
            body: Readable.toWeb(csvPoints(u * PER_UPLOAD, count, T0)) as never,
            duplex: 'half',
          });
          if (res.status !== 202) throw new Error(`upload ${u}: ${res.status} ${await res.text()}`);
          tasks.push(((await res.json()) as { task_id: string }).task_id);
        }
      }),
    );
    const pending = new Set(tasks);
    await waitUntil(
      'every upload to succeed',
      async () => {
        for (const id of [...pending]) {
          const t = (await (await fetch(`${base}/api/v1/tasks/${id}`, { headers: auth })).json()) as { status: string };
          if (t.status === 'failed') throw new Error(`task ${id} failed`);
          if (t.status === 'succeeded') pending.delete(id);
        }
        return pending.size === 0 ? true : undefined;
      },
      1_800_000,
      100,
    );
    const liveMs = performance.now() - started;
    const liveRate = (POINTS * 1000) / liveMs;

    // 2. A full rebuild into a new generation, with the CLI, verified against the live table.
    const rebuildStarted = performance.now();
    const run = await meridian(settings, ['replay', 'rebuild', 'points', '--json']);
    const wallMs = performance.now() - rebuildStarted;
    const result = JSON.parse(run.stdout) as {
      generation: number;
      stats: { events: number; points: number; batches: number; ms: number; inserts: number };
      verification: { ok: boolean } | null;
    };
    const s = result.stats;
    if (s.points !== POINTS) throw new Error(`the rebuild wrote ${s.points} points, not ${POINTS}`);
    if (!result.verification?.ok) throw new Error('the rebuilt generation does not verify against the live table');
    const pointsRate = (s.points * 1000) / s.ms;
    const eventsRate = (s.events * 1000) / s.ms;

    console.log(`\nbench-replay (${fmt(POINTS)} points in ${uploads} CSV uploads of ${fmt(PER_UPLOAD)}, ${CONCURRENCY} at a time, ${METRICS} metrics)`);
    console.log(`  live ingest:  ${fmt(liveRate)} points/s, first request → all queryable (${(liveMs / 1000).toFixed(1)} s)`);
    console.log(
      `  full rebuild: ${fmt(eventsRate)} events/s, ${fmt(pointsRate)} points/s (${fmt(s.events)} events, ${fmt(s.batches)} point batches, ${s.inserts} inserts, ${(s.ms / 1000).toFixed(1)} s projecting; ${(wallMs / 1000).toFixed(1)} s for the whole command with verification)`,
    );
    console.log(`  ratio rebuild/live ingest: ${(pointsRate / liveRate).toFixed(2)} (${pointsRate > liveRate ? 'faster' : 'SLOWER'} than live ingest)`);
    console.log(
      `  verification against the live table: ${result.verification.ok ? 'passed' : 'failed'}; generation ${result.generation} kept beside the live table`,
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
