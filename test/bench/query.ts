import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { clickhouse } from '../support/clickhouse.ts';
import { freePort } from '../support/ports.ts';
import { apiNodeOf, benchApi, dropBenchScope, fmt, givenSettings, percentile, repoRoot, stackProcesses, startProcess, readyAdminKey } from './common.ts';
import { startVictoriaMetrics } from './victoria-metrics.ts';

/**
 * make bench-query: PromQL latency, Meridian side by side with VictoriaMetrics on the same
 * points. BENCH_POINTS points (default 10M) over BENCH_SERIES counters (default 1,000) over
 * 24 h, plus one gauge over 30 days; each query runs BENCH_REPEAT times (default 20) on each,
 * alternating, and the p50 and p99 are printed with Meridian's ratio (the goal: within 2×).
 *   rate:   rate(bench_requests_total[5m]) over the 24 h at 1 m steps
 *   sum by: sum by (job) (rate(bench_requests_total[5m])) over the same
 *   30 d:   the single gauge over 30 days at 1 h steps
 *   max_over_time(…[1h]) at 1 h steps, of a dense gauge (one point every BENCH_DENSE_STEP_MS,
 *           default 1 s) over 30 days and of the counters over the 24 h: each twice, from the raw
 *           points (an api with MERIDIAN_PROMQL_ROLLUP_MIN_RANGE=off) and from the hourly rollup
 *           (the default), both beside VictoriaMetrics
 * With them, the CPU-seconds per million points in the query's range each side spent (from
 * /proc): Meridian's the api's and ClickHouse's (the local stack's process, which other work on
 * a shared machine adds to), VictoriaMetrics' its own.
 * Meridian's points are written straight into ClickHouse (the bench measures queries, not
 * ingest); VictoriaMetrics gets the same points through its Prometheus text import.
 *   BENCH_POINTS=1000000 BENCH_REPEAT=5 make bench-query     # a quicker, smaller run
 *   BENCH_QUERIES=rate,sumby,series   only these, and only the points they read written (keys: rate, sumby, series, dense-raw,
 *                                     dense-rollup, counters-raw, counters-rollup)
 *   BENCH_MERIDIAN_ROOTS=.,../main    the checkouts whose api answers as Meridian, each in turn within a repeat (side by
 *                                     side on the same points and load; each checkout's api with its own defaults for what
 *                                     the bench does not set); the raw scenarios ask this checkout's raw api only
 * The load average is printed with each scenario: on a shared machine it moves every figure.
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 10_000_000);
const SERIES = Number(process.env.BENCH_SERIES ?? 1000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 20);
const T0 = Date.UTC(2024, 0, 1);
const DAY = 86_400_000;
const PER_SERIES = Math.floor(POINTS / SERIES);
const STEP_MS = Math.floor(DAY / PER_SERIES);
const GAUGE_STEP_MS = 60_000;
const GAUGE_POINTS = (30 * DAY) / GAUGE_STEP_MS;
const DENSE_STEP_MS = Number(process.env.BENCH_DENSE_STEP_MS ?? 1000);
const DENSE_POINTS = Math.floor((30 * DAY) / DENSE_STEP_MS);

/** Series i's canonical name: labels sorted (instance < job). */
const counterName = (i: number) => `bench_requests_total{instance="i${i}",job="j${i % 10}"}`;
/** Point k of series i: a counter rising by 1 to 4 per sample, the same on both sides. */
const counterValue = (i: number, k: number) => k * 2 + (k % 3) + (i % 7);

const maxOverHours = (selector: string, days: number) => ({
  query: `max_over_time(${selector}[1h])`,
  start: String(T0 / 1000 + 3600),
  end: String((T0 + days * DAY) / 1000),
  step: '3600',
});

/** The points a query reads: the counters over 24 h, the gauge or the dense gauge over 30 days. */
type Data = 'counters' | 'gauge' | 'dense';

/** raw: asked of the api that reads every window from the raw points. */
const SCENARIOS: Array<{ key: string; name: string; data: Data; points: number; params: Record<string, string>; raw?: boolean }> = [
  {
    key: 'rate',
    name: `rate ${fmt(SERIES)} series, 24 h, 1 m`,
    data: 'counters',
    points: SERIES * PER_SERIES,
    params: { query: 'rate(bench_requests_total[5m])', start: String(T0 / 1000), end: String((T0 + DAY) / 1000), step: '60' },
  },
  {
    key: 'sumby',
    name: 'sum by, same',
    data: 'counters',
    points: SERIES * PER_SERIES,
    params: { query: 'sum by (job) (rate(bench_requests_total[5m]))', start: String(T0 / 1000), end: String((T0 + DAY) / 1000), step: '60' },
  },
  {
    key: 'series',
    name: 'one series, 30 d, 1 h',
    data: 'gauge',
    points: GAUGE_POINTS,
    params: { query: 'bench_gauge', start: String(T0 / 1000), end: String((T0 + 30 * DAY) / 1000), step: '3600' },
  },
  { key: 'dense-raw', name: 'max_over_time dense, 30 d, raw', data: 'dense', points: DENSE_POINTS, params: maxOverHours('bench_dense', 30), raw: true },
  { key: 'dense-rollup', name: 'max_over_time dense, 30 d, rollup', data: 'dense', points: DENSE_POINTS, params: maxOverHours('bench_dense', 30) },
  {
    key: 'counters-raw',
    name: `max_over_time ${fmt(SERIES)} s, 24 h, raw`,
    data: 'counters',
    points: SERIES * PER_SERIES,
    params: maxOverHours('bench_requests_total', 1),
    raw: true,
  },
  {
    key: 'counters-rollup',
    name: `max_over_time ${fmt(SERIES)} s, 24 h, rollup`,
    data: 'counters',
    points: SERIES * PER_SERIES,
    params: maxOverHours('bench_requests_total', 1),
  },
];

const ONLY = process.env.BENCH_QUERIES?.split(',').filter(Boolean) ?? null;
const unknown = ONLY?.filter((key) => !SCENARIOS.some((s) => s.key === key)) ?? [];
if (unknown.length > 0) throw new Error(`BENCH_QUERIES: no query ${unknown.join(', ')} (keys: ${SCENARIOS.map((s) => s.key).join(', ')})`);
const SELECTED = SCENARIOS.filter((s) => !ONLY || ONLY.includes(s.key));
/** Only the points the selected queries read are written, to both sides. */
const DATA = new Set(SELECTED.map((s) => s.data));
const MERIDIAN_ROOTS = (process.env.BENCH_MERIDIAN_ROOTS ?? '.').split(',').filter(Boolean);
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function prometheusText(): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; DATA.has('counters') && i < SERIES; i++) {
        const lines: string[] = [];
        for (let k = 0; k < PER_SERIES; k++) lines.push(`${counterName(i)} ${counterValue(i, k)} ${T0 + k * STEP_MS}`);
        yield `${lines.join('\n')}\n`;
      }
      if (DATA.has('gauge')) {
        const gauge: string[] = [];
        for (let k = 0; k < GAUGE_POINTS; k++) gauge.push(`bench_gauge ${(k % 1000) / 8} ${T0 + k * GAUGE_STEP_MS}`);
        yield `${gauge.join('\n')}\n`;
      }
      for (let from = 0; DATA.has('dense') && from < DENSE_POINTS; from += 100_000) {
        const dense: string[] = [];
        for (let k = from; k < Math.min(DENSE_POINTS, from + 100_000); k++) dense.push(`bench_dense ${k % 977} ${T0 + k * DENSE_STEP_MS}`);
        yield `${dense.join('\n')}\n`;
      }
    })(),
  );
}

type Cpu = () => number;

async function timed(url: string, headers: Record<string, string>, cpu: Cpu): Promise<{ ms: number; series: number; cpu: number }> {
  const cpuBefore = cpu();
  const started = performance.now();
  const res = await fetch(url, { headers }).catch((error: unknown) => {
    // A kept-alive connection the server closed while the other side's query ran (longer than its
    // keep-alive timeout) fails before any answer: sent once more, on a new connection.
    if ((error as { cause?: { code?: string } }).cause?.code !== 'UND_ERR_SOCKET') throw error;
    return fetch(url, { headers });
  });
  const body = (await res.json()) as { status: string; error?: string; data?: { result: unknown[] } };
  if (body.status !== 'success') throw new Error(`${url}: ${res.status} ${body.error}`);
  return { ms: performance.now() - started, series: body.data!.result.length, cpu: cpu() - cpuBefore };
}

async function main(): Promise<void> {
  const { settings, base } = await benchApi({
    MERIDIAN_PROMQL_MAX_SAMPLES: '100000000',
    MERIDIAN_PROMQL_TIMEOUT_MS: '600000',
    MERIDIAN_REQUEST_TIMEOUT_MS: '600000',
    MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
  });
  const BENCH_KEYS = ['MERIDIAN_PROMQL_MAX_SAMPLES', 'MERIDIAN_PROMQL_TIMEOUT_MS', 'MERIDIAN_REQUEST_TIMEOUT_MS', 'MERIDIAN_RATE_LIMIT_PER_SECOND'];
  // This checkout's api on the bench's port, then one per other checkout (its own defaults for the rest).
  const apis: Array<{ name: string; base: string; proc: ReturnType<typeof startProcess> }> = [];
  for (const checkout of MERIDIAN_ROOTS) {
    const root = `${resolve(repoRoot, checkout)}/`;
    if (root === repoRoot) {
      apis.push({ name: 'Meridian', base, proc: startProcess('apps/api/src/main.ts', settings) });
      continue;
    }
    const port = await freePort();
    const own = givenSettings(settings, [...BENCH_KEYS, 'LOG_LEVEL']);
    const proc = startProcess('apps/api/src/main.ts', own, { MERIDIAN_API_PORT: String(port) }, root, undefined, await apiNodeOf(root));
    apis.push({ name: `Meridian ${checkout}`, base: `http://127.0.0.1:${port}`, proc });
  }
  const rawPort = await freePort();
  const rawBase = `http://127.0.0.1:${rawPort}`;
  const rawApi = startProcess('apps/api/src/main.ts', settings, { MERIDIAN_API_PORT: String(rawPort), MERIDIAN_PROMQL_ROLLUP_MIN_RANGE: 'off' });
  const vm = await startVictoriaMetrics();
  try {
    const key = await readyAdminKey(settings, ...apis.map((a) => a.base), rawBase);
    const written = [
      DATA.has('counters') && `${fmt(SERIES * PER_SERIES)} counter points (${fmt(SERIES)} series, one every ${STEP_MS} ms over 24 h)`,
      DATA.has('gauge') && `a gauge of ${fmt(GAUGE_POINTS)} points over 30 days`,
      DATA.has('dense') && `a dense gauge of ${fmt(DENSE_POINTS)} points over 30 days`,
    ].filter(Boolean);
    console.log(`bench-query: ${written.join(', ')}`);
    // Generated by ClickHouse itself: i = the series, k = the point, as counterName and counterValue.
    const i = `intDiv(number, ${PER_SERIES})`;
    const k = `(number % ${PER_SERIES})`;
    if (DATA.has('counters')) {
      await clickhouse(
        settings,
        `INSERT INTO points SELECT concat('bench_requests_total{instance="i', toString(${i}), '",job="j', toString(${i} % 10), '"}'), ${T0} + ${k} * ${STEP_MS}, toFloat64(${k} * 2 + (${k} % 3) + (${i} % 7)), ${T0}, 'bench', 65535, 0, toUInt32(number) FROM numbers(${SERIES * PER_SERIES})`,
      );
    }
    if (DATA.has('gauge')) {
      await clickhouse(
        settings,
        `INSERT INTO points SELECT 'bench_gauge', ${T0} + number * ${GAUGE_STEP_MS}, (number % 1000) / 8, ${T0}, 'bench', 65535, 1, toUInt32(number) FROM numbers(${GAUGE_POINTS})`,
      );
    }
    if (DATA.has('dense')) {
      await clickhouse(
        settings,
        `INSERT INTO points SELECT 'bench_dense', ${T0} + number * ${DENSE_STEP_MS}, toFloat64(number % 977), ${T0}, 'bench', 65535, 2, toUInt32(number) FROM numbers(${DENSE_POINTS})`,
      );
    }
    await vm.importPrometheus(prometheusText());
    const clickhouseProc = stackProcesses().filter((p) => p.name === 'clickhouse');
    const clickhouseCpu = () => clickhouseProc.reduce((n, p) => n + p.cpuSeconds(), 0);
    const rows: string[] = [];
    const p50s = new Map<string, number>();
    for (const s of SELECTED) {
      const qs = new URLSearchParams(s.params).toString();
      const askers = s.raw ? [{ name: 'Meridian', base: rawBase, proc: rawApi }] : apis;
      const ours = askers.map(() => ({ ms: [] as number[], cpu: 0 }));
      const theirs: number[] = [];
      let counts = '';
      let theirCpu = 0;
      const loadBefore = loadAverage();
      for (let r = 0; r < REPEAT; r++) {
        // Each in turn first: the query after another on the same points finds ClickHouse's caches warm.
        for (let turn = 0; turn < askers.length; turn++) {
          const a = (turn + r) % askers.length;
          const asker = askers[a]!;
          const cpu: Cpu = () => asker.proc.cpuSeconds() + clickhouseCpu();
          const m = await timed(`${asker.base}/prometheus/api/v1/query_range?${qs}`, { Authorization: `Bearer ${key}` }, cpu);
          ours[a]!.ms.push(m.ms);
          ours[a]!.cpu += m.cpu;
          counts = `${m.series}`;
        }
        const v = await timed(`${vm.url}/api/v1/query_range?${qs}`, {}, vm.cpuSeconds);
        theirs.push(v.ms);
        theirCpu += v.cpu;
        counts = `${counts} / ${v.series} series`;
      }
      const perMillion = (cpu: number) => (cpu / REPEAT / (s.points / 1e6)).toFixed(2).padStart(6);
      theirs.sort((a, b) => a - b);
      const [v50, v99] = [percentile(theirs, 50), percentile(theirs, 99)];
      for (const [a, asker] of askers.entries()) {
        const mine = ours[a]!.ms.sort((x, y) => x - y);
        const [m50, m99] = [percentile(mine, 50), percentile(mine, 99)];
        const name = askers.length > 1 ? `${s.name} (${asker.name})` : s.name;
        if (a === 0) p50s.set(s.name, m50);
        rows.push(
          `${name.padEnd(32)} ${fmt(m50).padStart(7)} ${fmt(m99).padStart(7)}   ${fmt(v50).padStart(7)} ${fmt(v99).padStart(7)}   ${(m50 / v50).toFixed(1).padStart(5)}× ${(m99 / v99).toFixed(1).padStart(5)}×   ${perMillion(ours[a]!.cpu)} ${perMillion(theirCpu)}   ${counts}   load ${loadBefore} → ${loadAverage()}`,
        );
      }
    }
    console.log(
      `\n${'query'.padEnd(32)} ${'Meridian p50/p99 ms'.padStart(15)}   ${'VictoriaMetrics p50/p99 ms'.padStart(15)}   p50, p99 ratio (goal ≤ 2×)   CPU-s per M points (Meridian: api + ClickHouse; VM)`,
    );
    for (const row of rows) console.log(row);
    for (const [name, m50] of p50s) {
      const raw = p50s.get(name.replace(/ rollup$/, ' raw'));
      if (name.endsWith(' rollup') && raw !== undefined) console.log(`${name}: p50 ${(raw / m50).toFixed(1)}× faster than from the raw points`);
    }
  } finally {
    await vm.stop();
    for (const a of apis) await a.proc.stop();
    await rawApi.stop();
    await dropBenchScope(settings);
  }
}

await main();
