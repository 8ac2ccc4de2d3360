import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { formatTimestamp, parseSeriesName } from '@meridian/domain';
import { remoteWriteBody } from '../support/protocol-bodies.ts';
import {
  apiNodeOf,
  benchApi,
  cpuSplit,
  dropBenchScope,
  fmt,
  givenSettings,
  ingestNodeOf,
  percentile,
  postStream,
  repoRoot,
  scopeDataBytes,
  scopeInserts,
  stackProcesses,
  startProcess,
  waitUntil,
  readyAdminKey,
} from './common.ts';
import { telemetrySeries, type Series } from './telemetry.ts';
import { startVictoriaMetrics, type VictoriaMetrics } from './victoria-metrics.ts';

/**
 * make bench-push: many small pushes, the way agents send telemetry, to Meridian and to
 * VictoriaMetrics in the same run, each case on both one after the other (the order alternating),
 * printed as one table. Producers in a closed loop (each sends its next body once the last is
 * acknowledged), each with a user and key of its own, so per-user caps apply to each as to an
 * agent. It speaks only HTTP to Meridian: JSON uploads, tasks and downloads, whatever path the
 * api takes inside.
 *
 * Per case and system: points/s from the first request to the last ack, and until every point can
 * be read back; ack
 * p50/p99 (request sent → its 2xx, waits after a 429 or 503 included); freshness p99 (ack → the
 * body's points read back: Meridian's task long-polled until it ends, then a download that counts
 * them; VictoriaMetrics' /api/v1/export), on a sample of the pushes; CPU-seconds per million points
 * of each process from /proc; and the bytes each system's data directories grew by, per point.
 *   BENCH_POINTS=1000000        points per case (rounded to whole bodies per producer, at least one each)
 *   BENCH_CASES=p4,p64-1x1000   only these cases: ids (p4-1x10000, p64-100x100, p4-500x4-rw …) or any part of one (rw: the remote write cases)
 *   BENCH_RUNS=1                runs of every case; the table then shows each figure's range
 *   BENCH_FRESHNESS_SAMPLES=50  pushes per case whose freshness is followed (evenly spread; at most one in four); 0: none,
 *                               so the CPU is the writes' alone (a read-back is a download: a remote write body's by the prefix of its series)
 *   BENCH_SYSTEMS=meridian,victoria-metrics
 *   BENCH_MERIDIAN_ROOTS=.      the checkouts whose api and ingest run as Meridian, each a system of the table
 *                               (`../before,.` measures a change side by side with what it changes, in one run; each
 *                               checkout's apps take that checkout's defaults, so a changed default is measured too)
 * The api's per-user caps are its settings' defaults (MERIDIAN_* in the environment override
 * them) but for rate limiting, off unless MERIDIAN_RATE_LIMIT_PER_SECOND is set: the bench's own
 * task and download reads would count against it. The caps in force are printed.
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 1);
const CASE_FILTER = (process.env.BENCH_CASES ?? '').split(',').filter(Boolean);
const SYSTEMS = (process.env.BENCH_SYSTEMS ?? 'meridian,victoria-metrics').split(',').filter(Boolean);
const MERIDIAN_ROOTS = (process.env.BENCH_MERIDIAN_ROOTS ?? '.').split(',').filter(Boolean);
const SAMPLES = Number(process.env.BENCH_FRESHNESS_SAMPLES ?? 50);
/**
 * A scrape every second, from 2024 on (VictoriaMetrics runs with a retention long enough for it),
 * every series within its first day: a series' first point on a new day is a new entry in
 * VictoriaMetrics' per-day index, searchable only after about 10 s, which a run squeezing days
 * into seconds would meet far more often than an agent does (once a day). A body of 10,000 points
 * of one metric is then 2.8 hours of a 1 Hz sensor.
 */
const INTERVAL_MS = 1000;
const T0 = Date.UTC(2024, 0, 1);
/** Each series' one untimed point is at T0; its timed points start this much later. */
const FIRST_POINT_MS = 10_000;
/** Most points of one series in a case: with FIRST_POINT_MS, all within the day of T0. */
const POINTS_PER_SERIES = 80_000;
/** Series each producer owns at least when its bodies hold one metric: its bodies take them in turn, each continuing its series. */
const SERIES_PER_PRODUCER = 10;
/**
 * How often a freshness sample, or the end of a case, is looked for: every 50 ms, then every tenth
 * of the time waited so far (at most every 500 ms), so a system that takes seconds is not also
 * slowed by the bench's reads (each costs it CPU, counted in its figures).
 */
const POLL_MS = 50;
const poll = (waitedMs: number) => Math.min(500, Math.max(POLL_MS, waitedMs / 10));

/**
 * A body's shape: metrics in it, points of each, and how both systems are sent it: each its own
 * way (`native`: Meridian's JSON upload for one metric, remote write for many; VictoriaMetrics'
 * JSON-lines import), or as Prometheus sends it (`remote-write`: the same remote write 1.0 body to
 * both systems' /api/v1/write, its series labelled as a scrape's are).
 */
type Protocol = 'native' | 'remote-write';
type Shape = { readonly metrics: number; readonly pointsPerMetric: number; readonly protocol: Protocol };
type Case = { readonly id: string; readonly producers: number; readonly shape: Shape };

/** The cases: every producer count with every body shape. A new shape or count is one entry here. */
const PRODUCERS = [4, 64];
/**
 * The last is Prometheus' own request: 2,000 samples (its queue's max_samples_per_send) over 500
 * series, four scrapes of each, in one remote write.
 */
const SHAPES: readonly Shape[] = [
  { metrics: 1, pointsPerMetric: 10_000, protocol: 'native' },
  { metrics: 1, pointsPerMetric: 1_000, protocol: 'native' },
  { metrics: 100, pointsPerMetric: 100, protocol: 'native' },
  { metrics: 500, pointsPerMetric: 4, protocol: 'remote-write' },
];
const caseId = (producers: number, shape: Shape) => `p${producers}-${shape.metrics}x${shape.pointsPerMetric}${shape.protocol === 'remote-write' ? '-rw' : ''}`;
const CASES: readonly Case[] = PRODUCERS.flatMap((producers) => SHAPES.map((shape) => ({ id: caseId(producers, shape), producers, shape }))).filter(
  (c) => CASE_FILTER.length === 0 || CASE_FILTER.some((f) => c.id === f || c.id.split('-').includes(f)),
);

const pad2 = (n: number) => String(n).padStart(2, '0');
/** Producer p's metrics start with its prefix, on which its user has rw (and nothing else). */
const prefixOf = (producer: number) => `push_p${pad2(producer)}_`;
/** `seq` numbers a case's run: every run of every case writes series of its own. */
const metricName = (producer: number, seq: number, metric: number) => `${prefixOf(producer)}k${seq}_m${String(metric).padStart(3, '0')}`;

/**
 * Series as a Prometheus scrape labels them: 50 metric names, each on 10 targets (`instance`,
 * `job`), some with a further label as node_exporter's have (`cpu`, `device`, `mode`). The
 * canonical name is what Meridian stores; the labels travel in the remote write body.
 */
const SCRAPE_FAMILIES = 50;
function scrapedName(producer: number, seq: number, series: number): string {
  const family = series % SCRAPE_FAMILIES;
  const target = Math.floor(series / SCRAPE_FAMILIES);
  const extra =
    family % 3 === 0
      ? `,mode="${['idle', 'user', 'system', 'iowait'][target % 4]}"`
      : family % 3 === 1
        ? `,device="sd${String.fromCharCode(97 + (target % 4))}"`
        : '';
  return `${metricName(producer, seq, family)}{instance="10.0.${producer}.${10 + target}:9100",job="node"${extra}}`;
}

/**
 * Every producer's bodies for one run of a case, in the order it sends them: the same points for
 * every system. And, per producer, bodies of the same shape with one point of each series at T0
 * (on the same day as the rest), sent untimed: agents push to series that exist, and a series'
 * first point costs more (VictoriaMetrics makes a new series searchable only after about 10 s).
 */
function caseBodies(c: Case, seq: number): { bodies: Series[][][]; warm: Series[][][] } {
  const { metrics, pointsPerMetric } = c.shape;
  const perProducer = Math.max(1, Math.round(POINTS / (c.producers * metrics * pointsPerMetric)));
  const owned = metrics === 1 ? Math.max(SERIES_PER_PRODUCER, Math.ceil((perProducer * pointsPerMetric) / POINTS_PER_SERIES)) : metrics;
  const nameOf = c.shape.protocol === 'remote-write' ? scrapedName : metricName;
  const names = Array.from({ length: c.producers }, (_, p) => Array.from({ length: owned }, (_, m) => nameOf(p, seq, m)));
  const bodies = names.map((mine) => {
    const series = mine.map((name) => telemetrySeries(name, T0 + FIRST_POINT_MS, INTERVAL_MS));
    return Array.from({ length: perProducer }, (_, j) =>
      metrics === 1 ? [series[j % owned]!.next(pointsPerMetric)] : series.map((s) => s.next(pointsPerMetric)),
    );
  });
  const first = (name: string): Series => ({ name, timestamps: [T0], values: [0] });
  const warm = names.map((mine) => (metrics === 1 ? mine.map((name) => [first(name)]) : [mine.map(first)]));
  return { bodies, warm };
}

const pointsOf = (body: readonly Series[]) => body.reduce((n, s) => n + s.timestamps.length, 0);
const spanOf = (body: readonly Series[]) => ({
  from: Math.min(...body.map((s) => s.timestamps[0]!)),
  to: Math.max(...body.map((s) => s.timestamps.at(-1)!)),
});

type Answer = Awaited<ReturnType<typeof postStream>>;
/** A body as one request to a system, or why the system takes no such body in one request (the table says it). */
type Encoded = Buffer | { readonly unsupported: string };

/**
 * What the bench needs of a system. A new input of Meridian's (a route taking many metrics a
 * body, another format) is a new `encode` (and `push` path); the rest reads back through HTTP.
 */
type System = {
  readonly name: string;
  readonly processes: ReadonlyArray<{ name: string; cpuSeconds(): number }>;
  encode(body: readonly Series[], protocol: Protocol): Encoded;
  /** One request carrying an encoded body, as `producer`. */
  push(producer: number, bytes: Buffer): Promise<Answer>;
  /** Resolves once the body's points can be read back (its push answered `answer`); `ended` is told when its task ended, where it has one. */
  readable(producer: number, body: readonly Series[], answer: Answer, ended?: () => void): Promise<void>;
  /** Resolves once every point of the case's run `seq` can be read back. */
  drained(producers: number, seq: number, points: number, lastTs: number): Promise<void>;
  /** Throws if a push was taken but then refused (checked after the case, untimed). */
  assertNoneFailed(producers: number): Promise<void>;
  /** Bytes on disk of each of its data directories, once what it holds in memory is written. */
  dataBytes(): Promise<Record<string, number>>;
  /** Inserts so far per ClickHouse table (Meridian only). */
  inserts?(): Promise<Record<string, number>>;
  /** Starts a window of its processes' peak resident memory; peakRss() reads it, in MB. */
  markRss(): void;
  peakRss(): Record<string, number>;
};

/** Requests the bench itself sends to read back (tasks, downloads, exports, counts): their cost is in the systems' CPU. */
let reads = 0;

/** How long a read is asked again after 429 or 503 before the run ends on it. */
const READ_RETRY_MS = 600_000;

/**
 * A read as a client sends it: a 429 or 503 (the api busy, its budget or a dependency, such as
 * MERIDIAN_MAX_TASK_WAITERS_PER_USER long-polls of one user on a loaded machine) is asked again
 * after its Retry-After, for up to READ_RETRY_MS; any other failure ends the run naming it, rather
 * than a figure read from an error's body.
 */
async function getJson<T>(url: string, key: string): Promise<{ status: number; body: T }> {
  const deadline = Date.now() + READ_RETRY_MS;
  for (;;) {
    reads++;
    const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
    if ((res.status === 429 || res.status === 503) && Date.now() < deadline) {
      await res.body?.cancel();
      await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
      continue;
    }
    if (!res.ok) throw new Error(`GET ${url} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return { status: res.status, body: (await res.json()) as T };
  }
}

/** Meridian from a checkout (this one: '.'), named after it when it is another. */
async function meridianSystem(checkout: string): Promise<{ system: System; caps: string; stop(): Promise<void> }> {
  const extra = { MERIDIAN_RATE_LIMIT_PER_SECOND: process.env.MERIDIAN_RATE_LIMIT_PER_SECOND ?? '0' };
  const { settings, base } = await benchApi(extra);
  const root = `${resolve(repoRoot, checkout)}/`;
  // Each checkout's apps with its own defaults for what neither the bench nor the environment sets.
  const own = givenSettings(settings, [...Object.keys(extra), 'MERIDIAN_API_PORT']);
  const api = startProcess('apps/api/src/main.ts', own, {}, root, undefined, await apiNodeOf(root));
  const ingest = startProcess('apps/ingest/src/main.ts', own, {}, root, undefined, await ingestNodeOf(root));
  const stop = async () => {
    await Promise.all([api.stop(), ingest.stop()]);
    await dropBenchScope(settings);
  };
  const keys: string[] = [];
  try {
    const admin = { Authorization: `Bearer ${await readyAdminKey(settings, base)}`, 'Content-Type': 'application/json' };
    for (let p = 0; p < Math.max(...CASES.map((c) => c.producers)); p++) {
      const user = `push-p${pad2(p)}`;
      const created = await fetch(`${base}/api/v1/users`, { method: 'POST', headers: admin, body: JSON.stringify({ user_name: user }) });
      if (created.status !== 201) throw new Error(`creating ${user}: ${created.status} ${await created.text()}`);
      keys.push(((await created.json()) as { api_key: string }).api_key);
      const rules = await fetch(`${base}/api/v1/users/${user}/entitlements`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ metrics: [{ match: 'prefix', value: prefixOf(p), access: 'rw' }] }),
      });
      if (rules.status !== 200) throw new Error(`entitlements of ${user}: ${rules.status} ${await rules.text()}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }

  /**
   * Points of the body's metrics within its time span that a download returns (CSV: a header,
   * then a line a point). A POST with the names as a JSON array; labelled names hold commas,
   * which no list can: then every series starting as all of the body's do (a producer's bodies
   * each carry all its series of the case, so these are the body's series), within its span.
   */
  const downloaded = async (producer: number, body: readonly Series[]): Promise<number> => {
    const { from, to } = spanOf(body);
    const names = body.map((s) => s.name);
    const labelled = names.some((n) => n.includes(','));
    const query = {
      metrics: labelled ? commonPrefix(names) : names,
      ...(labelled ? { pattern: 'starts_with' } : {}),
      start_date: formatTimestamp(from),
      end_date: formatTimestamp(to),
      // Neighbouring bodies' points may share the span's edges (jittered scrapes).
      max_rows: 2 * pointsOf(body) + 1,
    };
    reads++;
    const res = await fetch(`${base}/api/v1/metrics/download`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${keys[producer]}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(query),
    });
    const text = await res.text();
    if (res.status === 404) return 0; // no such metric yet
    if (res.status !== 200) throw new Error(`download: ${res.status} ${text}`);
    return text.split('\n').filter(Boolean).length - 1;
  };

  type TaskList = { tasks: Array<{ task_id: string }> };
  const capsLine = Object.entries(settings)
    .filter(([k]) => /PER_USER|RATE_LIMIT|BACKLOG|PUSH|LAG|UPLOAD_GROUP|POINTS_PER_JSON|JSON_BODY|TASK_MAX_WAIT/.test(k))
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(', ');
  const system: System = {
    name: root === repoRoot ? 'Meridian' : `Meridian ${checkout}`,
    processes: [{ name: 'api', cpuSeconds: api.cpuSeconds }, { name: 'ingest', cpuSeconds: ingest.cpuSeconds }, ...stackProcesses()],
    encode(body, protocol) {
      // One metric: the JSON upload. Several: Prometheus remote write, the protocol that carries many series a request.
      if (protocol === 'remote-write' || body.length !== 1) return remoteWrite(body);
      const { name, timestamps, values } = body[0]!;
      const points = timestamps.map((t, i) => `{"timestamp":"${formatTimestamp(t)}","value":${values[i]}}`);
      return Buffer.from(`{"metric_name":${JSON.stringify(name)},"values":[${points.join(',')}]}`);
    },
    push: (producer, bytes) =>
      postStream(
        isJson(bytes) ? `${base}/api/v1/metrics/upload` : `${base}/api/v1/write`,
        {
          Authorization: `Bearer ${keys[producer]}`,
          ...(isJson(bytes) ? { 'Content-Type': 'application/json' } : { 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'snappy' }),
          'Content-Length': String(bytes.length),
        },
        Readable.from([bytes]),
      ),
    async readable(producer, body, answer, ended) {
      // The task first, when the answer names one (answered the moment it ends), then the points themselves.
      const taskId = (JSON.parse(answer.text || '{}') as { task_id?: string }).task_id;
      for (let status = ''; taskId !== undefined && status !== 'succeeded';) {
        status = (await getJson<{ status: string }>(`${base}/api/v1/tasks/${taskId}?wait=30`, keys[producer]!)).body.status;
        if (status === 'failed') throw new Error(`task ${taskId} failed`);
      }
      if (taskId !== undefined) ended?.();
      const expected = pointsOf(body);
      await waitUntil('a push to be downloadable', async () => ((await downloaded(producer, body)) >= expected ? true : undefined), 600_000, poll);
    },
    async drained(producers) {
      // One user at a time, none queued or running (short lists): no producer sends any more,
      // so a user found idle stays idle, and the wait costs a few requests per user, not per poll.
      for (let p = 0; p < producers; p++) {
        await waitUntil(
          'every task of the case to end',
          async () => {
            for (const status of ['queued', 'running']) {
              if ((await getJson<TaskList>(`${base}/api/v1/tasks?status=${status}&limit=1`, keys[p]!)).body.tasks.length > 0) return undefined;
            }
            return true;
          },
          600_000,
          poll,
        );
      }
    },
    async assertNoneFailed(producers) {
      // Every body the bench sends is valid: any failed task is a fault, not a figure.
      for (let p = 0; p < producers; p++) {
        const failed = (await getJson<TaskList>(`${base}/api/v1/tasks?status=failed&limit=1`, keys[p]!)).body.tasks[0];
        if (failed) throw new Error(`a push of producer ${p} failed: task ${failed.task_id}`);
      }
    },
    async dataBytes() {
      const { kafka, clickhouse, minio } = await scopeDataBytes(settings);
      return { Kafka: kafka, ClickHouse: clickhouse, MinIO: minio };
    },
    inserts: () => scopeInserts(settings),
    markRss() {
      api.mark();
      ingest.mark();
    },
    peakRss: () => ({ api: api.windowPeakMb(), ingest: ingest.windowPeakMb() }),
  };
  return { system, caps: capsLine, stop };
}

function commonPrefix(names: readonly string[]): string {
  let prefix = names[0] ?? '';
  for (const n of names) while (!n.startsWith(prefix)) prefix = prefix.slice(0, -1);
  return prefix;
}

/** A remote write 1.0 body of the series, each labelled as its canonical name says. */
function remoteWrite(body: readonly Series[]): Buffer {
  return remoteWriteBody(
    body.map((s) => {
      const parsed = parseSeriesName(s.name) ?? { metric: s.name, labels: [] };
      return { labels: [['__name__', parsed.metric], ...parsed.labels], samples: s.timestamps.map((t, i) => [t, s.values[i]!] as const) };
    }),
  );
}

/** Snappy's first byte is its body's length as a varint: past 127 bytes, never the `{` a JSON body starts with. */
const isJson = (bytes: Buffer) => bytes[0] === 0x7b;

function victoriaMetricsSystem(vm: VictoriaMetrics): System {
  // Series picked by their metric names (labelled series share them), within the body's time span.
  const selectorOf = (names: readonly string[]) => {
    const metrics = [...new Set(names.map((n) => parseSeriesName(n)?.metric ?? n))];
    return metrics.length === 1 ? `{__name__="${metrics[0]}"}` : `{__name__=~"${metrics.join('|')}"}`;
  };
  return {
    name: 'VictoriaMetrics',
    processes: [{ name: 'victoria-metrics', cpuSeconds: vm.cpuSeconds }],
    encode: (body, protocol) =>
      protocol === 'remote-write'
        ? remoteWrite(body)
        : Buffer.from(
            body
              .map((s) => `{"metric":{"__name__":${JSON.stringify(s.name)}},"values":[${s.values.join(',')}],"timestamps":[${s.timestamps.join(',')}]}\n`)
              .join(''),
          ),
    push: (_producer, bytes) => (isJson(bytes) ? vm.importJsonLines(bytes) : vm.remoteWrite(bytes)),
    async readable(_producer, body) {
      const { from, to } = spanOf(body);
      const expected = pointsOf(body);
      const selector = selectorOf(body.map((s) => s.name));
      await waitUntil(
        'a push to be exported',
        async () => {
          reads++;
          return (await vm.exportedPoints(selector, from, to)) >= expected ? true : undefined;
        },
        600_000,
        poll,
      );
    },
    async drained(_producers, seq, points, lastTs) {
      const selector = `{__name__=~"push_p[0-9]+_k${seq}_m[0-9]+"}`;
      // The window leaves out each series' untimed point at T0: it opens within the second after T0.
      const window = lastTs - T0 - FIRST_POINT_MS + 8000;
      await waitUntil(
        'every point of the case to be counted',
        async () => {
          reads++;
          return (await vm.count(selector, lastTs, window)) >= points ? true : undefined;
        },
        600_000,
        poll,
      );
    },
    async dataBytes() {
      // Its recent rows wait in memory (about a second) before they reach the disk.
      await vm.flush();
      return { 'data dir': await vm.dataBytes() };
    },
    // Its import answers 204 once it has taken the rows; nothing fails later.
    assertNoneFailed: async () => {},
    markRss() {},
    peakRss: () => ({}),
  };
}

/** Freshness split where a system's pushes have tasks: ack → task ended, and → points read back, p50/p99. */
function freshnessLine(f: Figures): string {
  if (f.taskEnded.length === 0) return '';
  const p = (xs: number[]) => `${Math.round(percentile(xs, 50))}/${Math.round(percentile(xs, 99))}`;
  return ` freshness p50/p99 ms: task ended ${p(f.taskEnded)}, read back ${p(f.freshness)},`;
}

type Figures = {
  readonly points: number;
  /** First request → last ack, and → every point readable. */
  readonly ackedMs: number;
  readonly ms: number;
  readonly acks: number[];
  readonly freshness: number[];
  /** Of the freshness samples with a task: ack → the task read as ended. */
  readonly taskEnded: number[];
  readonly refused: number;
  readonly cpu: Record<string, number>;
  readonly cpuTotal: number;
  readonly clientCpu: number;
  readonly reads: number;
  /** What the bench's read-backs cost the system, measured by sending them once more after the case (a floor: during it some were polls sent again and again). */
  readonly readsCpu: number;
  readonly bytes: Record<string, number>;
  /** ClickHouse inserts of the case per table, those with any (Meridian). */
  readonly inserts: ReadonlyArray<readonly [string, number]>;
  readonly rss: Record<string, number>;
  readonly load: readonly [number, number];
};

/** One run of one case on one system: its figures, or why the system has none (a body it takes in no single request). */
async function runCase(system: System, c: Case, seq: number, bodies: Series[][][]): Promise<Figures | string> {
  const encoded = bodies.map((list) => list.map((b) => system.encode(b, c.shape.protocol)));
  const unsupported = encoded.flat().find((e): e is { unsupported: string } => !Buffer.isBuffer(e));
  if (unsupported) return unsupported.unsupported;
  const requests = encoded as Buffer[][];
  const points = bodies.flat().reduce((n, b) => n + pointsOf(b), 0);
  const lastTs = Math.max(...bodies.flat().map((b) => spanOf(b).to));
  const pushes = bodies.reduce((n, list) => n + list.length, 0);
  // Every `every`-th push in send order (round by round across producers) has its freshness
  // followed; at most one in four, since reading a body back costs Meridian about what writing it
  // does (measured: the floor printed beside the CPU), and a case of few pushes would mostly measure that.
  const every = SAMPLES > 0 ? Math.max(4, Math.floor(pushes / SAMPLES)) : 0;

  const before = await system.dataBytes();
  const insertsBefore = (await system.inserts?.()) ?? {};
  system.markRss();
  const loadBefore = loadavg()[0]!;
  const split = cpuSplit(system.processes);
  const client = process.cpuUsage();
  const readsBefore = reads;
  const acks: number[] = [];
  const freshness: number[] = [];
  const taskEnded: number[] = [];
  const following: Array<Promise<void>> = [];
  const sampled: Array<() => Promise<void>> = [];
  let failure: unknown;
  let refused = 0;
  const started = performance.now();

  const produce = async (p: number) => {
    for (let j = 0; j < requests[p]!.length; j++) {
      const sent = performance.now();
      let answer: Answer;
      for (;;) {
        answer = await system.push(p, requests[p]![j]!);
        if (answer.status !== 429 && answer.status !== 503) break;
        // Refused for now: wait what it asks, then send the same body again (the ack includes the wait).
        refused++;
        await new Promise((r) => setTimeout(r, Number(answer.headers['retry-after'] ?? 1) * 1000));
      }
      if (answer.status < 200 || answer.status > 299) throw new Error(`${system.name} ${c.id}: push ${j} of producer ${p}: ${answer.status} ${answer.text}`);
      const acked = performance.now();
      acks.push(acked - sent);
      if (every > 0 && (j * c.producers + p) % every === 0) {
        sampled.push(() => system.readable(p, bodies[p]![j]!, answer));
        following.push(
          system
            .readable(p, bodies[p]![j]!, answer, () => void taskEnded.push(performance.now() - acked))
            .then(
              () => void freshness.push(performance.now() - acked),
              (error: unknown) => void (failure ??= error),
            ),
        );
      }
    }
  };
  await Promise.all(Array.from({ length: c.producers }, (_, p) => produce(p)));
  const ackedMs = performance.now() - started;
  await system.drained(c.producers, seq, points, lastTs);
  const ms = performance.now() - started;
  await Promise.all(following);
  if (failure !== undefined) throw failure;
  const spent = split.end();
  const clientCpu = process.cpuUsage(client);
  const readsDuring = reads - readsBefore;
  await system.assertNoneFailed(c.producers);
  const after = await system.dataBytes();
  const insertsAfter = (await system.inserts?.()) ?? {};
  const again = cpuSplit(system.processes);
  await Promise.all(sampled.map((read) => read()));
  await system.drained(c.producers, seq, points, lastTs);
  const readsCpu = again.end().total;
  return {
    points,
    ackedMs,
    ms,
    acks: acks.sort((a, b) => a - b),
    freshness: freshness.sort((a, b) => a - b),
    taskEnded: taskEnded.sort((a, b) => a - b),
    refused,
    cpu: Object.fromEntries(system.processes.map((proc) => [proc.name, spent.of(proc.name)])),
    cpuTotal: spent.total,
    clientCpu: (clientCpu.user + clientCpu.system) / 1e6,
    reads: readsDuring,
    readsCpu,
    bytes: Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - (before[k] ?? NaN)])),
    inserts: Object.entries(insertsAfter)
      .map(([table, n]) => [table, n - (insertsBefore[table] ?? 0)] as const)
      .filter(([, n]) => n > 0),
    rss: system.peakRss(),
    load: [loadBefore, loadavg()[0]!],
  };
}

/** The ClickHouse inserts of a case, per table, for its run's line (none for a system that does not count them). */
function insertsLine(inserts: ReadonlyArray<readonly [string, number]>): string {
  return inserts.length === 0 ? '' : ` ClickHouse inserts ${inserts.map(([table, n]) => `${table} ${n}`).join(', ')},`;
}

/** Each producer sends its warm-up bodies one after the other, then all are followed until readable; untimed. Skipped for bodies the system takes in no single request. */
async function warmSeries(system: System, warm: Series[][][], protocol: Protocol = 'native'): Promise<void> {
  await Promise.all(
    warm.map(async (bodies, p) => {
      const sent: Array<Promise<void>> = [];
      for (const body of bodies) {
        const bytes = system.encode(body, protocol);
        if (!Buffer.isBuffer(bytes)) return;
        const answer = await system.push(p, bytes);
        if (answer.status < 200 || answer.status > 299) throw new Error(`${system.name}: a warm-up push: ${answer.status} ${answer.text}`);
        sent.push(system.readable(p, body, answer));
      }
      await Promise.all(sent);
    }),
  );
}

/**
 * Waits, at most 10 s, until the processes of both systems are nearly idle (under 0.3 of a core
 * over a second), so one case's tail (merges, the projector catching up) is not measured as
 * the next one's. The local stack is shared: other work on it may keep it from settling.
 */
async function settle(processes: ReadonlyArray<{ name: string; cpuSeconds(): number }>): Promise<void> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
    const split = cpuSplit(processes);
    await new Promise((r) => setTimeout(r, 1000));
    if (split.end().total < 0.3) return;
  }
}

/** min–max of a figure over the runs, formatted; one value when they agree. */
function range(values: readonly number[], f: (n: number) => string): string {
  const ok = values.filter(Number.isFinite);
  if (ok.length === 0) return '—';
  const [lo, hi] = [f(Math.min(...ok)), f(Math.max(...ok))];
  return lo === hi ? lo : `${lo}–${hi}`;
}

const perMillion = (seconds: number, points: number) => (seconds * 1e6) / points;

function tableRow(c: Case, system: string, runs: ReadonlyArray<Figures | string>, peer: ReadonlyArray<Figures | string> | undefined): string {
  const first = runs[0];
  if (typeof first === 'string') return `| ${c.id} | ${system} | ${first} | | | | | | | | |`;
  const figs = runs as Figures[];
  const peerFigs = peer?.every((r) => typeof r !== 'string') ? (peer as Figures[]) : undefined;
  const rate = (f: Figures) => (f.points * 1000) / f.ms;
  const ackedRate = (f: Figures) => (f.points * 1000) / f.ackedMs;
  const cpu = (f: Figures) => perMillion(f.cpuTotal, f.points);
  const ratio = (mine: (f: Figures) => number) =>
    peerFigs
      ? ` (${range(
          figs.map((f, i) => (peerFigs[i] ? mine(f) / mine(peerFigs[i]) : NaN)),
          (n) => `${n.toFixed(2)}×`,
        )})`
      : '';
  const ms = (n: number) => n.toFixed(0);
  const names = Object.keys(figs[0]!.cpu);
  const perProcess = names
    .map(
      (n) =>
        `${n} ${range(
          figs.map((f) => perMillion(f.cpu[n]!, f.points)),
          (v) => v.toFixed(2),
        )}`,
    )
    .join(', ');
  const dirs = Object.keys(figs[0]!.bytes);
  const bytes = (f: Figures) => Object.values(f.bytes).reduce((s, b) => s + b, 0) / f.points;
  const perDir = dirs
    .map(
      (d) =>
        `${d} ${range(
          figs.map((f) => f.bytes[d]! / f.points),
          (v) => v.toFixed(1),
        )}`,
    )
    .join(', ');
  const rss =
    Object.keys(figs[0]!.rss)
      .map(
        (n) =>
          `${n} ${range(
            figs.map((f) => f.rss[n]!),
            fmt,
          )}`,
      )
      .join(', ') || '—';
  return [
    '',
    c.id,
    system,
    range(
      figs.map((f) => f.points),
      fmt,
    ),
    `${range(figs.map(ackedRate), fmt)}${ratio(ackedRate)}`,
    `${range(figs.map(rate), fmt)}${ratio(rate)}`,
    `${range(
      figs.map((f) => percentile(f.acks, 50)),
      ms,
    )} / ${range(
      figs.map((f) => percentile(f.acks, 99)),
      ms,
    )}`,
    `${range(
      figs.map((f) => percentile(f.freshness, 99)),
      ms,
    )} (${range(
      figs.map((f) => f.freshness.length),
      String,
    )})`,
    `${range(figs.map(cpu), (v) => v.toFixed(2))}${ratio(cpu)}: ${perProcess}; the bench's reads ≥ ${range(
      figs.map((f) => perMillion(f.readsCpu, f.points)),
      (v) => v.toFixed(2),
    )}`,
    `${range(figs.map(bytes), (v) => v.toFixed(1))}: ${perDir}`,
    range(
      figs.map((f) => f.refused),
      String,
    ),
    rss,
    '',
  ]
    .join(' | ')
    .trim();
}

async function main(): Promise<void> {
  if (CASES.length === 0) throw new Error(`BENCH_CASES=${process.env.BENCH_CASES} matches no case`);
  const systems: System[] = [];
  const stops: Array<() => Promise<void>> = [];
  let caps = '';
  try {
    for (const checkout of SYSTEMS.includes('meridian') ? MERIDIAN_ROOTS : []) {
      const meridian = await meridianSystem(checkout);
      systems.push(meridian.system);
      stops.push(meridian.stop);
      caps = meridian.caps;
    }
    if (SYSTEMS.includes('victoria-metrics')) {
      const vm = await startVictoriaMetrics();
      systems.push(victoriaMetricsSystem(vm));
      stops.push(vm.stop);
    }
    const allProcesses = systems.flatMap((s) => s.processes);
    // A first push of every producer, followed until readable: connections, code paths and each
    // user's first task are warm before anything is timed.
    const first = Array.from({ length: Math.max(...CASES.map((c) => c.producers)) }, (_, p) => [
      [telemetrySeries(metricName(p, 0, 0), T0, INTERVAL_MS).next(10)],
    ]);
    for (const system of systems) await warmSeries(system, first);

    const results = new Map<string, Array<Figures | string>>();
    let seq = 0;
    for (let run = 0; run < RUNS; run++) {
      for (const [i, c] of CASES.entries()) {
        const { bodies, warm } = caseBodies(c, ++seq);
        // Who goes first alternates: neither system always follows the other's tail.
        const order = (run + i) % 2 === 0 ? systems : [...systems].reverse();
        for (const system of order) {
          await warmSeries(system, warm, c.shape.protocol);
          await settle(allProcesses);
          const figures = await runCase(system, c, seq, bodies);
          const key = `${c.id} ${system.name}`;
          results.set(key, [...(results.get(key) ?? []), figures]);
          const line =
            typeof figures === 'string'
              ? figures
              : `${fmt((figures.points * 1000) / figures.ms)} points/s, ${figures.cpuTotal.toFixed(1)} CPU-s, bench client ${figures.clientCpu.toFixed(1)} CPU-s and ${figures.reads} reads,${freshnessLine(figures)}${insertsLine(figures.inserts)} load ${figures.load[0].toFixed(1)} → ${figures.load[1].toFixed(1)}`;
          console.error(`bench-push: run ${run + 1} ${c.id} ${system.name}: ${line}`);
        }
      }
    }

    const loads = [...results.values()]
      .flat()
      .filter((f): f is Figures => typeof f !== 'string')
      .flatMap((f) => f.load);
    console.log(
      `\nbench-push: ${RUNS} run${RUNS > 1 ? 's' : ''} (ranges over runs), about ${fmt(POINTS)} points a case; producers in a closed loop, each its own user; load average ${range(loads, (v) => v.toFixed(1))} during the cases`,
    );
    console.log(
      '\n| case | system | points | points/s acked | points/s readable | ack p50 / p99 ms | freshness p99 ms (samples) | CPU-s per 1M points: all (per process) | bytes per point: all (per directory) | 429/503 | peak RSS MB |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const c of CASES) {
      const peer = results.get(`${c.id} VictoriaMetrics`);
      for (const system of systems) {
        const runs = results.get(`${c.id} ${system.name}`) ?? [];
        console.log(tableRow(c, system.name, runs, system.name === 'VictoriaMetrics' ? undefined : peer));
      }
    }
    console.log(
      [
        '',
        `Case p<N>-<M>x<K>: N producers, bodies of M metrics × K points, a scrape every ${INTERVAL_MS / 1000} s (random walks, counters, levels; jittered timestamps); -rw: the same Prometheus remote write body (series labelled as a scrape's) to both systems' /api/v1/write.`,
        'points/s acked: first request → last ack; readable: → every point readable (Meridian: no task of the case queued or running; VictoriaMetrics: a query counts them all); × is against VictoriaMetrics in the same run.',
        `Before a case is timed, each of its series gets one point ${FIRST_POINT_MS / 1000} s before its first, the same day, on both systems: the pushes go to series that exist.`,
        `ack: request sent → its 2xx, including waits after a 429 or 503. freshness: ack → the body's points read back (Meridian: its task long-polled until it ended, then a download of its points; VictoriaMetrics: /api/v1/export), on ${SAMPLES} pushes or so per case (at most one in four; the p99 of fewer than 100 is about the largest), polled every ${POLL_MS} ms, then less often as a wait grows.`,
        "CPU: utime+stime from /proc over the same span, the bench's own reads included (their count per case is in the lines above the table; \"the bench's reads ≥\" is what sending them once more after the case cost, a floor); Kafka, ClickHouse and MinIO are the local stack's processes, found by the ports of their endpoints (other work on a shared stack counts too).",
        "bytes: growth of the bench's own topics' log dirs, its database's active ClickHouse parts and its MinIO bucket, against VictoriaMetrics' data dir after a forced flush.",
        `Meridian's caps in force: ${caps || '(Meridian not run)'}${MERIDIAN_ROOTS.length > 1 ? " (this checkout's; each checkout's apps take their own defaults for what neither the bench nor the environment sets)" : ''}.`,
      ].join('\n'),
    );
  } finally {
    for (const stop of stops) await stop().catch((e: unknown) => console.warn(`bench-push: stopping: ${String(e)}`));
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
