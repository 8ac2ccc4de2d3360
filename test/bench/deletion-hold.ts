import { adapterOptions } from '@meridian/config';
import { createClickHouse } from '@meridian/clickhouse';
import { benchApi, dropBenchScope, fmt, readyAdminKey, startProcess, waitUntil } from './common.ts';

/**
 * What a deletion holds back: BENCH_POINTS points (10M by default) of one metric in points, one a
 * second from 2024-01-01, written as the projector writes them (in the points partition of that
 * metric, before its deletion's marker); then, BENCH_REPEAT times, a push of another metric alone
 * (its freshness: from the push sent to its task succeeded), and a deletion of one hour of the first
 * metric followed at once by the same push, whose freshness now includes the wait for the deletion
 * (one ingest process: its projector applies the marker before anything else).
 *   BENCH_POINTS=1000000 BENCH_REPEAT=3 node test/bench/deletion-hold.ts
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 10_000_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const T0 = Date.UTC(2024, 0, 1);
const HELD = 'bench.deleted';
const OTHER = 'bench.pushed';
const { settings, base } = await benchApi({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
const iso = (ms: number) => new Date(ms).toISOString();

async function post(key: string, path: string, body: unknown): Promise<{ task_id: string }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 202) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { task_id: string };
}

async function succeeded(key: string, taskId: string): Promise<number> {
  await waitUntil(
    `task ${taskId}`,
    async () => {
      const task = (await (await fetch(`${base}/api/v1/tasks/${taskId}`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { status: string };
      if (task.status === 'failed') throw new Error(`task ${taskId} failed`);
      return task.status === 'succeeded' ? true : undefined;
    },
    600_000,
    20,
  );
  return performance.now();
}

/** A push of one point of OTHER and its freshness in ms. */
async function pushed(key: string, second: number): Promise<number> {
  const started = performance.now();
  const { task_id } = await post(key, '/api/v1/metrics/upload', { metric_name: OTHER, values: [{ timestamp: iso(T0 + second * 1000), value: second }] });
  return (await succeeded(key, task_id)) - started;
}

async function main(): Promise<void> {
  const api = startProcess('apps/api/src/main.ts', settings);
  const ingest = startProcess('apps/ingest/src/main.ts', settings);
  const client = createClickHouse(adapterOptions(settings, 'bench-deletion-hold').clickhouse);
  try {
    const key = await readyAdminKey(settings, base);
    // One point through the api gives the metric's points partition and an offset before any marker.
    await succeeded(key, (await post(key, '/api/v1/metrics/upload', { metric_name: HELD, values: [{ timestamp: iso(T0 - 1000), value: 0 }] })).task_id);
    const [at] = await (
      await client.query({ query: `SELECT kafka_partition AS p, kafka_offset AS o FROM points WHERE metric_name = '${HELD}'`, format: 'JSONEachRow' })
    ).json<{ p: number; o: string }>();
    await client.command({
      query: `INSERT INTO points SELECT '${HELD}', ${T0} + number * 1000, toFloat64(number), ${T0}, 'bench', ${at!.p}, ${at!.o}, toUInt32(number) FROM numbers(${POINTS})`,
    });
    const [table] = await (
      await client.query({
        query:
          "SELECT toString(sum(rows)) AS rows, toString(sum(bytes_on_disk)) AS bytes, toString(count()) AS parts FROM system.parts WHERE database = currentDatabase() AND table = 'points' AND active",
        format: 'JSONEachRow',
      })
    ).json<{ rows: string; bytes: string; parts: string }>();
    console.log(`points: ${fmt(Number(table!.rows))} rows, ${fmt(Number(table!.bytes) / 2 ** 20)} MiB, ${table!.parts} parts; one ingest process`);
    await pushed(key, 0); // warm
    for (let i = 1; i <= REPEAT; i++) {
      const alone = await pushed(key, i);
      const from = T0 + i * 86_400_000;
      const asked = performance.now();
      const deletion = await post(key, '/api/v1/metrics/delete', { metrics: HELD, start_date: iso(from), end_date: iso(from + 3_599_000), reason: 'bench' });
      const [during, deletedAt] = await Promise.all([pushed(key, 100 + i), succeeded(key, deletion.task_id)]);
      console.log(
        `run ${i}: a push alone ${fmt(alone)} ms; the deletion of 3,600 points ${fmt(deletedAt - asked)} ms; a push sent right after it ${fmt(during)} ms`,
      );
    }
  } finally {
    await client.close();
    await ingest.stop();
    await api.stop();
    await dropBenchScope(settings);
  }
}

await main();
