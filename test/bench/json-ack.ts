import { formatTimestamp } from '@meridian/domain';
import type { Settings } from '@meridian/config';
import { benchApi, dropBenchScope, fmt, percentile, startProcess, type Proc, readyAdminKey } from './common.ts';

/**
 * make bench-json-ack: the ack latency of JSON uploads (the time from sending the request to its
 * 202), BENCH_UPLOADS sequential uploads of BENCH_POINTS points each, to a real api with no ingest
 * running (the ack does not wait for it). With BENCH_COMPARE_ROOT set to other checkouts (older
 * commits, say, exported beside this one; comma-separated), an api from each runs too on its own
 * scope, and the uploads go round them in turn, so a loaded machine weighs on all alike: the
 * figures of one run compare.
 *   BENCH_COMPARE_ROOT=/tmp/base/ BENCH_UPLOADS=200 make bench-json-ack
 */
const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 200);
const POINTS = Number(process.env.BENCH_POINTS ?? 10_000);
const WARMUP = 10;
const T0 = Date.UTC(2024, 0, 1);
const compareRoots = (process.env.BENCH_COMPARE_ROOT ?? '')
  .split(',')
  .filter(Boolean)
  .map((r) => (r.endsWith('/') ? r : `${r}/`));

type Target = { name: string; base: string; proc: Proc; key: string; ms: number[]; settings: Settings };

async function start(name: string, root?: string): Promise<Target> {
  // No rate limit: the bench sends as fast as the answers come.
  const { settings, base } = await benchApi({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
  const proc = startProcess('apps/api/src/main.ts', settings, {}, root);
  return { name, base, proc, key: await readyAdminKey(settings, base), ms: [], settings };
}

function body(n: number): string {
  const values = Array.from({ length: POINTS }, (_, i) => ({ timestamp: formatTimestamp(T0 + (n * POINTS + i) * 1000), value: i / 8 }));
  return JSON.stringify({ metric_name: `bench.json.${n % 10}`, values });
}

async function upload(target: Target, text: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${target.base}/api/v1/metrics/upload`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${target.key}`, 'Content-Type': 'application/json' },
    body: text,
  });
  await res.arrayBuffer();
  if (res.status !== 202) throw new Error(`${target.name}: ${res.status}`);
  return performance.now() - started;
}

async function main(): Promise<void> {
  const targets = [await start('this checkout')];
  for (const root of compareRoots) targets.push(await start(root, root));
  try {
    const text = body(0);
    console.log(
      `${UPLOADS} sequential JSON uploads of ${fmt(POINTS)} points (${fmt(Buffer.byteLength(text) / 1024)} KiB) to each api, in turn, after ${WARMUP} warm-up uploads each`,
    );
    for (let i = 0; i < WARMUP + UPLOADS; i++) {
      // Rotate which api goes first, so none always follows another's work.
      const order = targets.map((_, k) => targets[(i + k) % targets.length]!);
      for (const t of order) {
        const ms = await upload(t, text);
        if (i >= WARMUP) t.ms.push(ms);
      }
    }
    console.log('\n| api | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|');
    for (const t of targets) {
      const s = [...t.ms].sort((a, b) => a - b);
      console.log(
        `| ${t.name} | ${percentile(s, 50).toFixed(1)} | ${percentile(s, 90).toFixed(1)} | ${percentile(s, 99).toFixed(1)} | ${s.at(-1)!.toFixed(1)} |`,
      );
    }
  } finally {
    await Promise.all(targets.map((t) => t.proc.stop()));
    for (const t of targets) await dropBenchScope(t.settings);
  }
}

await main();
