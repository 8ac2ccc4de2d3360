import { clickhouseMetricCatalog, type ConnOptions } from '@meridian/clickhouse';
import { withBenchDatabase } from './common.ts';

/**
 * The catalog read of a download by prefix, two ways side by side in one run: the whole catalog
 * read and filtered in the process (how the api resolved a pattern before), against the store
 * matching the prefix (`matching`). PRODUCERS × SERIES series of one point each, named as a
 * remote write names them; each read selects one producer's series. Per read: wall ms and this
 * process's CPU ms (the api's share; ClickHouse's is in its own process).
 *   eval "$(deploy/local/stack.sh env)" && node --expose-gc test/bench/catalog-pattern.ts
 */

const PRODUCERS = Number(process.env.BENCH_PRODUCERS ?? 100);
const SERIES = Number(process.env.BENCH_SERIES ?? 1000);
const READS = 20;

async function reads(catalog: ReturnType<typeof clickhouseMetricCatalog>, way: 'whole' | 'matching'): Promise<{ ms: number; cpuMs: number; picked: number }> {
  (globalThis as { gc?: () => void }).gc?.();
  const cpu = process.cpuUsage();
  const started = performance.now();
  let picked = 0;
  for (let i = 0; i < READS; i++) {
    const prefix = `bench_p${i % PRODUCERS}_`;
    const entries = way === 'whole' ? (await catalog.list()).filter((e) => e.metric_name.startsWith(prefix)) : await catalog.matching('starts_with', prefix);
    picked += entries.length;
  }
  const used = process.cpuUsage(cpu);
  return { ms: (performance.now() - started) / READS, cpuMs: (used.user + used.system) / 1000 / READS, picked };
}

async function run(conn: ConnOptions): Promise<void> {
  const catalog = clickhouseMetricCatalog(conn);
  console.log(`${PRODUCERS * SERIES} series; each read selects the ${SERIES} of one producer`);
  for (let r = 0; r < 3; r++) {
    const whole = await reads(catalog, 'whole');
    const matching = await reads(catalog, 'matching');
    if (whole.picked !== matching.picked) throw new Error(`the two ways picked ${whole.picked} and ${matching.picked} entries`);
    console.log(
      `run ${r + 1}: whole catalog ${whole.ms.toFixed(1)} ms, ${whole.cpuMs.toFixed(1)} CPU ms a read; matched by the store ${matching.ms.toFixed(1)} ms, ` +
        `${matching.cpuMs.toFixed(1)} CPU ms; ratio ${(whole.ms / matching.ms).toFixed(1)}× wall, ${(whole.cpuMs / matching.cpuMs).toFixed(1)}× CPU`,
    );
  }
}

withBenchDatabase('bench-catalog-pattern', async (conn, client) => {
  await client.command({
    query:
      `INSERT INTO points SELECT concat('bench_p', toString(intDiv(number, ${SERIES})), '_requests_total{instance="host-', toString(number % ${SERIES}), '",job="api"}'), ` +
      `1600000000000, 1, 1, 'b', toUInt16(0), number, toUInt32(0) FROM system.numbers LIMIT ${PRODUCERS * SERIES}`,
  });
  await run(conn);
}).then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
