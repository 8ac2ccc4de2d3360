import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { request, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { adapterOptions, loadSettings, type Settings } from '@meridian/config';
import { createClickHouse, ensureDatabase, migrate, quoteIdentifier, type ClickHouseClient, type ConnOptions } from '@meridian/clickhouse';
import { formatTimestamp } from '@meridian/domain';
import { createLogger, silenceKnownWarnings } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { freePort } from '../support/ports.ts';
import { API_NODE_ENV, API_NODE_FLAGS } from '../../apps/api/src/node-flags.ts';
import { INGEST_NODE_FLAGS } from '../../apps/ingest/src/node-flags.ts';
import { commandLine, listeningPid, portOf } from './listeners.ts';

/** Shared pieces of the benchmarks: real api and ingest processes on a fresh scope of the local stack. */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export function benchSettings(extra: Record<string, string> = {}): Settings {
  const scope = `bench${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  return loadSettings({ ...process.env, MERIDIAN_TOPIC_PREFIX: `${scope}.`, CLICKHOUSE_DATABASE: scope, S3_BUCKET: scope, LOG_LEVEL: 'warn', ...extra });
}

/** The settings benchSettings sets whatever its caller asks. */
const BENCH_SET = ['MERIDIAN_TOPIC_PREFIX', 'CLICKHOUSE_DATABASE', 'S3_BUCKET', 'LOG_LEVEL'];

/**
 * Of a bench's settings, those it or the environment gives (its scope, the `keys` its caller set,
 * MERIDIAN_* set in the environment): for apps from another checkout, which then take that
 * checkout's own defaults for the rest, so a changed default is measured beside the one before it.
 */
export function givenSettings(settings: Settings, keys: readonly string[]): Settings {
  const given = new Set([...Object.keys(process.env), ...BENCH_SET, ...keys]);
  return Object.fromEntries(Object.entries(settings).filter(([k]) => given.has(k))) as Settings;
}

/** Settings for a bench api on a loopback port free when asked, and the base URL it will answer on. */
export async function benchApi(extra: Record<string, string> = {}): Promise<{ settings: Settings; base: string }> {
  // A port free now, not a random one: a run died on one another process held.
  const port = await freePort();
  return { settings: benchSettings({ MERIDIAN_API_PORT: String(port), ...extra }), base: `http://127.0.0.1:${port}` };
}

/** peakRssMb: the process's high-water mark; windowPeakMb: the highest RSS sampled since the last mark(); cpuSeconds: user + system time so far (all its threads). */
export type Proc = {
  child: ChildProcess;
  peakRssMb(): number;
  rssMb(): number;
  mark(): void;
  windowPeakMb(): number;
  cpuSeconds(): number;
  stop(): Promise<void>;
};

/** User + system CPU seconds of a live process, from /proc (fields 14 and 15 of its stat, in clock ticks of 1/100 s); NaN once it is gone. */
export function processCpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Where the local stack (deploy/local) keeps its pid files and data: MERIDIAN_VAR, `.var` by default. */
const stackVar = () => process.env.MERIDIAN_VAR ?? `${repoRoot}.var`;

/** Where the stack's services listen, from the endpoints in the environment (deploy/local/stack.sh env). */
const STACK_ENDPOINTS: ReadonlyArray<readonly [name: string, env: string]> = [
  ['kafka', 'KAFKA_BROKERS'],
  ['clickhouse', 'CLICKHOUSE_URL'],
  ['minio', 'S3_ENDPOINT'],
];

/**
 * The pid of a stack service: the process listening on its endpoint's port when that is on this
 * machine (any checkout's stack: the services are shared), else the pid file of this checkout's
 * stack (deploy/local: MERIDIAN_VAR/run, `.var` by default).
 */
function stackPid(name: string, env: string): number | undefined {
  const endpoint = process.env[env]?.split(',')[0];
  if (endpoint && /(^|\/\/)(127\.0\.0\.1|localhost)[:/]/.test(endpoint)) {
    const pid = listeningPid(portOf(endpoint));
    if (pid !== undefined) return pid;
  }
  try {
    return Number(readFileSync(`${stackVar()}/run/${name}.pid`, 'utf8').trim());
  } catch {
    return undefined;
  }
}

/**
 * The local stack's services, for the CPU they spend while a bench case runs. A service not
 * found (not on this machine, not this user's) is named on stderr: its CPU is then not in the
 * figures, which would understate Meridian's.
 */
export function stackProcesses(): Array<{ name: string; cpuSeconds(): number }> {
  const out: Array<{ name: string; cpuSeconds(): number }> = [];
  for (const [name, env] of STACK_ENDPOINTS) {
    const pid = stackPid(name, env);
    if (pid !== undefined && Number.isFinite(processCpuSeconds(pid))) out.push({ name, cpuSeconds: () => processCpuSeconds(pid) });
    else console.error(`bench: no local process of ${name} found (${env}=${process.env[env] ?? ''}): its CPU is not counted`);
  }
  return out;
}

/** The arguments of a stack service's process, or none when it is not found here. */
function stackArgs(name: string): string[] {
  const env = STACK_ENDPOINTS.find(([n]) => n === name)![1];
  const pid = stackPid(name, env);
  return pid === undefined ? [] : commandLine(pid);
}

/** What the processes spent between cpuSplit() and end(): one line of it, the sum, and one process's share. */
export type CpuSpent = { readonly line: string; readonly total: number; of(name: string): number };

/**
 * Where a case's time goes: the CPU seconds each process spent between cpuSplit() and end(),
 * against the wall time, so a reader sees which process is the cost and how many of the
 * machine's cores the case kept busy. CPU is also the figure that a shared machine disturbs
 * least (a wall clock times the other work too).
 */
export function cpuSplit(procs: ReadonlyArray<{ name: string; cpuSeconds(): number }>): { end(): CpuSpent } {
  const before = procs.map((p) => p.cpuSeconds());
  const started = performance.now();
  return {
    end() {
      const spent = procs.map((p, i) => ({ name: p.name, s: p.cpuSeconds() - before[i]! }));
      const total = spent.reduce((sum, p) => sum + p.s, 0);
      const wall = (performance.now() - started) / 1000;
      return {
        line: `CPU-seconds: ${spent.map((p) => `${p.name} ${p.s.toFixed(1)}`).join(', ')}; ${total.toFixed(1)} in all over ${wall.toFixed(1)} s (${(total / wall).toFixed(2)} cores busy on average)`,
        total,
        of: (name) => spent.find((p) => p.name === name)?.s ?? NaN,
      };
    },
  };
}

/**
 * Bytes a directory tree takes on disk (allocated blocks, not apparent sizes: Kafka preallocates
 * its index files sparse, 10 MB each, that hold a few KB). Files that go while it is walked (merged
 * parts, rolled segments) are skipped; NaN when the directory does not exist.
 */
export function dirBytes(dir: string, keep: (name: string) => boolean = () => true): number {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return NaN;
  }
  let bytes = 0;
  for (const e of entries) {
    if (!keep(e.name)) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) bytes += dirBytes(path) || 0;
    else {
      try {
        bytes += statSync(path).blocks * 512;
      } catch {
        /* gone meanwhile */
      }
    }
  }
  return bytes;
}

/** The local stack's Kafka log directories (the server.properties its broker runs with); none when the broker is not on this machine. */
export function kafkaLogDirs(): string[] {
  const properties = stackArgs('kafka').find((a) => a.endsWith('server.properties')) ?? `${stackVar()}/kafka/server.properties`;
  try {
    return (/^log\.dirs=(.*)$/m.exec(readFileSync(properties, 'utf8'))?.[1]?.split(',') ?? []).map((d) => d.trim());
  } catch {
    return [];
  }
}

/**
 * Bytes of each topic's log segments under a prefix (`<topic>-<partition>/*.log`, their length:
 * the records as the broker keeps them, without the indexes it preallocates sparse), by topic.
 */
export function kafkaTopicBytes(prefix: string): Map<string, number> {
  const bytes = new Map<string, number>();
  for (const dir of kafkaLogDirs()) {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const topic = entry.isDirectory() && entry.name.startsWith(prefix) ? /^(.*)-\d+$/.exec(entry.name)?.[1] : undefined;
      if (topic === undefined) continue;
      for (const file of readdirSync(join(dir, entry.name)).filter((f) => f.endsWith('.log'))) {
        try {
          bytes.set(topic, (bytes.get(topic) ?? 0) + statSync(join(dir, entry.name, file)).size);
        } catch {
          /* rolled away meanwhile */
        }
      }
    }
  }
  return bytes;
}

/**
 * A request to the stack's ClickHouse over HTTP: `params` (query, database, …) beside those the
 * endpoint itself carries (CLICKHOUSE_URL may hold settings such as `log_queries=1`).
 */
export function clickhouseUrl(settings: Settings, params: Readonly<Record<string, string>>): string {
  const url = new URL(settings.CLICKHOUSE_URL);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

/**
 * What a bench scope holds on the local stack's disks: its topics' directories in Kafka's log
 * dir, its database's active parts in ClickHouse (parts a merge replaced, waiting for their
 * removal, are not counted: they go within minutes), and its bucket's directory in MinIO. NaN for
 * a service that is not the local stack's (its directories are not on this machine).
 */
export async function scopeDataBytes(settings: Settings): Promise<{ kafka: number; clickhouse: number; minio: number }> {
  const minioArgs = stackArgs('minio');
  const server = minioArgs.indexOf('server');
  const minioData = (server >= 0 ? minioArgs[server + 1] : undefined) ?? `${stackVar()}/minio/data`;
  const logDirs = kafkaLogDirs();
  const kafka = logDirs.length === 0 ? NaN : logDirs.reduce((sum, d) => sum + (dirBytes(d, (name) => name.startsWith(settings.MERIDIAN_TOPIC_PREFIX)) || 0), 0);
  const query = `SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '${settings.CLICKHOUSE_DATABASE}'`;
  const clickhouse = await fetch(clickhouseUrl(settings, { query })).then(
    async (r) => (r.ok ? Number((await r.text()).trim()) : NaN),
    () => NaN,
  );
  return { kafka, clickhouse, minio: dirBytes(`${minioData}/${settings.S3_BUCKET}`) };
}

/** The points archive's objects (segments and index) on the local MinIO's disk: `_archive/` of the scope's bucket; NaN when MinIO is not here. */
export function archiveDataBytes(settings: Settings): number {
  const minioArgs = stackArgs('minio');
  const server = minioArgs.indexOf('server');
  const minioData = (server >= 0 ? minioArgs[server + 1] : undefined) ?? `${stackVar()}/minio/data`;
  return dirBytes(`${minioData}/${settings.S3_BUCKET}/_archive`);
}

/** The V8 flags and environment a checkout's api is started with (its apps/api/src/node-flags.ts). */
export async function apiNodeOf(root: string): Promise<AppNode> {
  const own = (await import(`${root}apps/api/src/node-flags.ts`)) as { API_NODE_FLAGS: readonly string[]; API_NODE_ENV: Readonly<Record<string, string>> };
  return { flags: own.API_NODE_FLAGS, env: own.API_NODE_ENV };
}

/** The V8 flags a checkout's ingest worker is started with (its apps/ingest/src/node-flags.ts; none in a checkout from before that file). */
export async function ingestNodeOf(root: string): Promise<AppNode> {
  const file = `${root}apps/ingest/src/node-flags.ts`;
  if (!existsSync(file)) return { flags: [], env: {} };
  const own = (await import(file)) as { INGEST_NODE_FLAGS: readonly string[] };
  return { flags: own.INGEST_NODE_FLAGS, env: {} };
}

/** An app's V8 flags and the environment it is started with beside them. */
export type AppNode = { readonly flags: readonly string[]; readonly env: Readonly<Record<string, string>> };

/**
 * Blocks written into each table of the scope's database so far: its highest block number (a
 * MergeTree numbers every insert's part, and a mutation; merges number none), so the difference
 * over a case is the inserts it made. Empty for a server this cannot ask.
 */
export async function scopeInserts(settings: Settings): Promise<Record<string, number>> {
  const query = `SELECT table, max(max_block_number) FROM system.parts WHERE database = '${settings.CLICKHOUSE_DATABASE}' GROUP BY table FORMAT TSV`;
  const text = await fetch(clickhouseUrl(settings, { query })).then(
    async (r) => (r.ok ? r.text() : ''),
    () => '',
  );
  const rows = text
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t'));
  return Object.fromEntries(rows.map(([table, blocks]) => [table!, Number(blocks)]));
}

/**
 * Starts an app as its own process (from this checkout, or another `root`) and samples its
 * resident memory until it stops. With `onLine`, its standard output (its log, JSON lines) goes
 * to that function line by line instead of to this process's. `node`: the app's V8 flags and
 * environment, this checkout's unless given (another checkout's apps run with their own: apiNodeOf, ingestNodeOf).
 */
export function startProcess(
  script: string,
  settings: Settings,
  extraEnv: Record<string, string> = {},
  root = repoRoot,
  onLine?: (line: string) => void,
  node: AppNode = script === 'apps/api/src/main.ts'
    ? { flags: API_NODE_FLAGS, env: API_NODE_ENV }
    : script === 'apps/ingest/src/main.ts'
      ? { flags: INGEST_NODE_FLAGS, env: {} }
      : { flags: [], env: {} },
): Proc {
  const env = { ...process.env, ...node.env, ...Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, String(v)])), ...extraEnv };
  const child = spawn(process.execPath, [...node.flags, `${root}${script}`], { env, stdio: ['ignore', onLine ? 'pipe' : 'inherit', 'inherit'] });
  if (onLine && child.stdout) createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', onLine);
  let peak = 0;
  let rss = 0;
  let windowPeak = 0;
  let stopping = false;
  // An app that dies under the bench ends the bench at once, instead of leaving it waiting.
  child.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(`bench: ${script} exited (${signal ?? `code ${code}`}) while the bench needed it`);
    process.exit(1);
  });
  const timer = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
      rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
      peak = Math.max(peak, hwm);
      windowPeak = Math.max(windowPeak, rss);
    } catch {
      /* exited */
    }
  }, 100);
  return {
    child,
    peakRssMb: () => Math.round(peak),
    rssMb: () => Math.round(rss),
    mark: () => {
      windowPeak = rss;
    },
    windowPeakMb: () => Math.round(windowPeak),
    cpuSeconds: () => processCpuSeconds(child.pid),
    stop: () =>
      new Promise((resolve) => {
        stopping = true;
        clearInterval(timer);
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * POSTs a stream with node:http; the answer's status and text. Every case and every reference
 * sends its bodies through it: fetch with a web stream body cost this process 3–6 CPU-seconds
 * for a 735 MB file against about 0.6, and on a 2-core machine the client's CPU is taken from
 * the processes being measured. Files are read in 1 MiB chunks (fileStream).
 */
export async function postStream(
  url: string,
  headers: Record<string, string>,
  body: Readable,
): Promise<{ status: number; text: string; headers: IncomingMessage['headers'] }> {
  const req = request(url, { method: 'POST', headers });
  const answered = new Promise<IncomingMessage>((resolve, reject) => req.once('response', resolve).once('error', reject));
  await pipeline(body, req);
  const res = await answered;
  let text = '';
  for await (const chunk of res) text += String(chunk);
  return { status: res.statusCode ?? 0, text, headers: res.headers };
}

/** A file on disk, read in 1 MiB chunks: the bench's client then costs it less than Node's default 64 KiB. */
export function fileStream(path: string): Readable {
  return createReadStream(path, { highWaterMark: 1024 * 1024 });
}

/** Probes until it answers; `everyMs` may grow with the time waited so far (a long wait then costs the prober fewer probes). */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs: number | ((waitedMs: number) => number) = 100,
): Promise<T> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, typeof everyMs === 'number' ? everyMs : everyMs(Date.now() - started)));
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const fmt = (n: number) => Math.round(n).toLocaleString('en');

export function settingsEnv(settings: Settings): NodeJS.ProcessEnv {
  return { ...process.env, ...Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, String(v)])) };
}

/** Runs the real `meridian` CLI on the bench's settings; it logs at error only, so stdout is its output. */
export function meridian(settings: Settings, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      `${repoRoot}apps/cli/bin/meridian`,
      args,
      { env: { ...settingsEnv(settings), LOG_LEVEL: 'error' }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve({ stdout, stderr })),
    );
  });
}

/** An admin API key, made as an operator would: `meridian users add bench --admin --json`. */
export async function adminKey(settings: Settings): Promise<string> {
  return (JSON.parse((await meridian(settings, ['users', 'add', 'bench', '--admin', '--json'])).stdout) as { api_key: string }).api_key;
}

/**
 * Waits for each api to be ready, makes the admin key, and waits until each api accepts it: the
 * CLI writes the new user to the log, and an api knows it only once its accounts fold has read
 * that far, so a request sent at once may be answered 401.
 */
export async function readyAdminKey(settings: Settings, ...bases: readonly string[]): Promise<string> {
  for (const base of bases) await waitUntil('the api', async () => ((await fetch(`${base}/readyz`).catch(() => null))?.ok ? true : undefined), 120_000, 250);
  const key = await adminKey(settings);
  for (const base of bases)
    await waitUntil(
      'the api to know the admin key',
      async () => ((await fetch(`${base}/api/v1/users`, { headers: { Authorization: `Bearer ${key}` } })).ok ? true : undefined),
      30_000,
      100,
    );
  return key;
}

/** `timestamp,value` CSV lines for points first..first+count-1, one second apart from t0, generated as they are read. */
export function csvPoints(first: number, count: number, t0: number): Readable {
  return Readable.from(
    (function* () {
      for (let i = first; i < first + count;) {
        const lines: string[] = [];
        for (let k = 0; k < 20_000 && i < first + count; k++, i++) lines.push(`${formatTimestamp(t0 + i * 1000)},${(i % 1000) / 8}`);
        yield `${lines.join('\n')}\n`;
      }
    })(),
  );
}

/**
 * `count` points over `metrics` metrics in the download layout, grouped by metric as
 * /download writes them, one second apart from t0 within a metric. `zulu` writes the times
 * with `Z` instead of `+0000` (RFC 3339, for the peer's CSV import); `header` adds the header line.
 * `timeMajor` writes the same points (the same names, times and values) ordered by time instead:
 * every metric at one timestamp, then the next, as a historian export or a scrape snapshot does.
 */
export function downloadPoints(count: number, metrics: number, t0: number, { zulu = false, header = true, timeMajor = false } = {}): Readable {
  const perMetric = Math.ceil(count / metrics);
  const time = (ms: number) => (zulu ? `${formatTimestamp(ms).slice(0, -5)}Z` : formatTimestamp(ms));
  const updatedAt = time(t0 + perMetric * 1000);
  // The metric-major index of the n-th row written: the same set of points in either order
  // (time-major skips the indices at or past `count` that the last, shorter metric lacks).
  const rowOf = timeMajor ? (n: number) => (n % metrics) * perMetric + Math.floor(n / metrics) : (n: number) => n;
  const rows = timeMajor ? perMetric * metrics : count;
  return Readable.from(
    (function* () {
      if (header) yield 'metric_name,timestamp,metric_numeric_value,updated_at\n';
      for (let n = 0; n < rows;) {
        const lines: string[] = [];
        for (let k = 0; k < 20_000 && n < rows; n++) {
          const i = rowOf(n);
          if (i >= count) continue;
          k++;
          lines.push(
            `bench.download.m${String(Math.floor(i / perMetric)).padStart(4, '0')},${time(t0 + (i % perMetric) * 1000)},${(i % 1000) / 8},${updatedAt}`,
          );
        }
        yield `${lines.join('\n')}\n`;
      }
    })(),
  );
}

/**
 * The scope's topics, database and bucket go once measured: a million tasks are a gigabyte of
 * log, and a bench-ingest run 2 GB of log and 1 GB of tables, on a shared machine (left behind,
 * they once filled its disk, and a later run died on EPIPE).
 */
export async function dropScope(platform: Platform): Promise<void> {
  const { admin, topics, settings, clickhouse, storage } = platform;
  await admin.deleteTopics({ topics: Object.values(topics) }).catch((e: unknown) => console.warn(`bench: topics not deleted: ${String(e)}`));
  await clickhouse
    .command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` })
    .catch((e: unknown) => console.warn(`bench: database not dropped: ${String(e)}`));
  // A bucket goes only once empty (snapshots, blobs, staged bytes a failed case left).
  const emptied = async () => {
    const names: string[] = [];
    for await (const item of storage.client.listObjectsV2(storage.bucket, '', true) as AsyncIterable<{ name?: string }>) if (item.name) names.push(item.name);
    await storage.client.removeObjects(storage.bucket, names);
    await storage.client.removeBucket(storage.bucket);
  };
  await emptied().catch((e: unknown) => console.warn(`bench: bucket not removed: ${String(e)}`));
}

/**
 * A migrated ClickHouse database of the bench's own (from bench settings) for `work`, dropped
 * after it: for a bench of ClickHouse reads alone, with no topic or bucket to drop.
 */
export async function withBenchDatabase(component: string, work: (conn: ConnOptions, client: ClickHouseClient) => Promise<void>): Promise<void> {
  const conn = adapterOptions(benchSettings(), component).clickhouse;
  const client = createClickHouse(conn);
  try {
    await ensureDatabase(conn);
    await migrate(client);
    await work(conn, client);
  } finally {
    await client.command({ query: `DROP DATABASE IF EXISTS ${quoteIdentifier(conn.database)}` });
    await client.close();
  }
}

/** dropScope with a platform of its own, for a bench that has none. */
export async function dropBenchScope(settings: Settings): Promise<void> {
  silenceKnownWarnings(); // kafkajs' admin client, as every process of ours does
  const platform = createPlatform(settings, createLogger({ name: 'bench', level: 'warn' }), 'bench');
  try {
    await dropScope(platform);
  } finally {
    await platform.close();
  }
}
