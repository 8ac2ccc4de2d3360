import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { clickhouseFileReadModel, clickhouseTaskReadModel } from '@meridian/clickhouse';
import type { Settings } from '@meridian/config';
import { createLogger, silenceKnownWarnings } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { createSnapshotStore } from '@meridian/storage';
import { API_NODE_ENV, API_NODE_FLAGS } from '../../apps/api/src/node-flags.ts';
import { INGEST_NODE_FLAGS } from '../../apps/ingest/src/node-flags.ts';
import { benchApi, dropScope, fmt, percentile, repoRoot, settingsEnv } from './common.ts';
import { writeHistory, type WrittenHistory } from './history-log.ts';
import { historyGoals, historyTable, NOT_MEASURED, type Figure, type HistoryRow, type ReadAtStart } from './history-report.ts';

/**
 * make bench-history: does a process get slower or bigger with the log's age? For each size N,
 * on a scope of its own, writes N finished upload tasks (1,000 users, 100k files) straight to
 * the log. A running system keeps its derived state current (the tasks and files read models, the
 * accounts snapshots), so the bench first brings it there: a warm-up ingest process runs until its
 * projectors have covered the tasks and files topics and it has written an accounts snapshot up
 * to the log's end, and stops. Then it measures a restart: a new api process and a new ingest
 * process, each timed from spawn to ready (api: /readyz 200; ingest: its probe listener's
 * /readyz 200), RSS once ready, the events each read at start, and p99 of GET /tasks/{id},
 * GET /tasks and GET /files. It writes the log and talks HTTP and procfs; only the warm-up's
 * stop condition reads the read model's positions and the snapshot objects.
 *   BENCH_HISTORY_SIZES=0,100000,1000000 BENCH_HISTORY_FILES=100000 make bench-history
 */
const SIZES = (process.env.BENCH_HISTORY_SIZES ?? '0,100000,1000000').split(',').map(Number);
const FILES = Number(process.env.BENCH_HISTORY_FILES ?? 100_000);
const USERS = Number(process.env.BENCH_HISTORY_USERS ?? 1000);
/** Files per owner: MERIDIAN_MAX_FILES_PER_USER's default, so an owner holds as many as the service lets one. */
const FILES_PER_OWNER = 10_000;
const REQUESTS = Number(process.env.BENCH_HISTORY_REQUESTS ?? 500);
/** Requests before the measured ones, not counted: the first calls of a route compile its code. */
const WARMUP = 20;
const READY_CAP_MS = Number(process.env.BENCH_HISTORY_READY_CAP_MS ?? 120_000);
/** A file to append every spawned process's output to (to see where a start spends its time); unset: none. */
const TRACE = process.env.BENCH_HISTORY_TRACE;
const READY_POLL_MS = 25;
/** How long the warm-up may take to project the tasks and write the snapshots (a million tasks are three million events). */
const WARM_CAP_MS = Number(process.env.BENCH_HISTORY_WARM_CAP_MS ?? 1_800_000);
const WARM_POLL_MS = 1000;
const MAX_FAILURES = 10;

/** A spawned app: when it became ready (or why it did not), its RSS, and a stop. */
type Launched = {
  readonly pid: number;
  readonly startedAt: number;
  /** Milliseconds from spawn to its first log line: the process's own boot (loading its modules), which no history changes. */
  firstOutputMs(): number | null;
  exitReason(): string | null;
  readAtStart(): ReadAtStart;
  stop(): Promise<void>;
};

/**
 * Spawns an app as every launcher does (api with API_NODE_FLAGS, ingest with INGEST_NODE_FLAGS, no heap limit flag: the V8 default),
 * keeping its last output and, from its log, the events each fold read at start (the line a
 * fold logs once caught up: its topic and events_read).
 */
function launch(app: 'api' | 'ingest', env: NodeJS.ProcessEnv): Launched {
  const startedAt = performance.now();
  const child = spawn(process.execPath, [...(app === 'api' ? API_NODE_FLAGS : INGEST_NODE_FLAGS), `${repoRoot}apps/${app}/src/main.ts`], {
    cwd: repoRoot,
    env: { ...(app === 'api' ? API_NODE_ENV : {}), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const topicPrefix = env.MERIDIAN_TOPIC_PREFIX ?? '';
  const readAtStart: Record<string, number> = {};
  let tail = '';
  let partial = '';
  let exitReason: string | null = null;
  let firstOutputMs: number | null = null;
  const keep = (d: Buffer) => {
    firstOutputMs ??= performance.now() - startedAt;
    tail = (tail + d.toString()).slice(-16_384);
    if (TRACE) appendFileSync(TRACE, d);
  };
  if (TRACE) appendFileSync(TRACE, `--- ${app} pid ${child.pid} at ${new Date().toISOString()}\n`);
  child.stderr.on('data', keep);
  child.stdout.on('data', (d: Buffer) => {
    keep(d);
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      try {
        const { topic, events_read: read } = JSON.parse(line) as { topic?: unknown; events_read?: unknown };
        if (typeof topic === 'string' && typeof read === 'number') {
          const fold = topic.startsWith(topicPrefix) ? topic.slice(topicPrefix.length) : topic;
          // A log folded by two parts of one process (each its own copy) counts the larger read.
          readAtStart[fold] = Math.max(readAtStart[fold] ?? 0, read);
        }
      } catch {
        /* not a log line */
      }
    }
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exitReason = /heap out of memory|Allocation failed/i.test(tail) ? 'died: heap' : `died: ${signal ?? `code ${code}`}`;
      resolve();
    }),
  );
  return {
    pid: child.pid!,
    startedAt,
    firstOutputMs: () => firstOutputMs,
    exitReason: () => exitReason,
    readAtStart: () => ({ ...readAtStart }),
    async stop() {
      if (exitReason !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Milliseconds from spawn until `readyAt` answers a time; or why not: the process died, or the cap passed. */
async function untilReady(proc: Launched, readyAt: () => Promise<number | undefined>): Promise<Figure> {
  for (;;) {
    const died = proc.exitReason();
    if (died !== null) return died;
    const at = await readyAt();
    if (at !== undefined) return at - proc.startedAt;
    if (performance.now() - proc.startedAt > READY_CAP_MS) return `> ${READY_CAP_MS / 1000} s`;
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
}

/** A time once `url` answers 200 (a probe's /readyz), else undefined. */
async function answers200(url: string): Promise<number | undefined> {
  const res = await fetch(url, { signal: AbortSignal.timeout(1000) }).catch(() => null);
  await res?.arrayBuffer();
  return res?.status === 200 ? performance.now() : undefined;
}

/** A loopback port free right now, for a listener of a process about to start. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * CPU time (user + system) the process has used so far, from /proc (clock ticks of 10 ms on
 * Linux); null elsewhere. On a shared machine it says what a start or a request costs where
 * wall-clock time says mostly how busy the machine was.
 */
function cpuMsOf(pid: number): number | null {
  try {
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

const showCpu = (ms: number | null): string => (ms === null ? 'CPU —' : `CPU ${ms} ms`);

/** VmRSS once ready; for a process still not ready at the cap, what it held then (no figure, but it says how far it had grown). */
function rssOf(proc: Launched, ready: Figure): Figure {
  if (proc.exitReason() !== null) return NOT_MEASURED;
  let mb: number;
  try {
    mb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))?.[1]) / 1024;
  } catch {
    return NOT_MEASURED;
  }
  return typeof ready === 'number' ? mb : `${Math.round(mb)} MB at cap`;
}

/**
 * p99 of sequential GETs (after WARMUP unmeasured ones); any answer but 200, or none within 10 s,
 * makes the figure a count of failures. MAX_FAILURES of them end the series: a process thrashing
 * at its heap limit would otherwise hold the bench for REQUESTS times the timeout.
 */
async function p99(name: string, requests: () => { url: string; key: string | null }, server?: number): Promise<Figure> {
  const ms: number[] = [];
  let cpuBefore: number | null = null;
  let failed = 0;
  for (let i = 0; i < WARMUP + REQUESTS && failed < MAX_FAILURES; i++) {
    const { url, key } = requests();
    const started = performance.now();
    try {
      const res = await fetch(url, { headers: key === null ? {} : { Authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      if (res.status !== 200) failed++;
    } catch {
      failed++;
    }
    if (i >= WARMUP) ms.push(performance.now() - started);
    if (i === WARMUP - 1 && server !== undefined) cpuBefore = cpuMsOf(server);
  }
  const cpuAfter = server === undefined ? null : cpuMsOf(server);
  const perRequest = cpuBefore === null || cpuAfter === null ? '' : `; server CPU ${((cpuAfter - cpuBefore) / REQUESTS).toFixed(2)} ms per request`;
  if (failed > 0) return failed < MAX_FAILURES ? `${failed} of ${WARMUP + REQUESTS} failed` : `stopped: ${failed} failed`;
  ms.sort((a, b) => a - b);
  // The median beside the tail: on a shared machine the p99 is mostly the load's.
  console.log(
    `    ${name}: p50 ${percentile(ms, 50).toFixed(1)} ms, p90 ${percentile(ms, 90).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms${perRequest}; load average ${loadavg()[0]!.toFixed(1)}`,
  );
  return percentile(ms, 99);
}

const showMs = (f: Figure | null): string => (typeof f === 'number' ? `${(f / 1000).toFixed(2)} s` : String(f));

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

/** Per fold, meridian_fold_start_events_read from the api's admin /metrics. */
async function apiReadAtStart(adminPort: number): Promise<ReadAtStart> {
  const text = await fetch(`http://127.0.0.1:${adminPort}/metrics`, { signal: AbortSignal.timeout(5000) })
    .then((r) => r.text())
    .catch(() => '');
  const read: Record<string, number> = {};
  for (const m of text.matchAll(/^meridian_fold_start_events_read\{fold="([^"]+)"\} (\d+)$/gm)) read[m[1]!] = Number(m[2]);
  return read;
}

async function measureApi(settings: Settings, base: string, history: WrittenHistory, fileOwners: number) {
  const adminPort = await freePort();
  const api = launch('api', { ...settingsEnv(settings), MERIDIAN_ADMIN_PORT: String(adminPort) });
  try {
    const ready = await untilReady(api, () => answers200(`${base}/readyz`));
    const rss = rssOf(api, ready);
    console.log(
      `    api: first log line ${showMs(api.firstOutputMs())} after spawn, ready ${showMs(ready)} (${showCpu(cpuMsOf(api.pid))}); load average ${loadavg()[0]!.toFixed(1)}`,
    );
    if (typeof ready !== 'number')
      return { figures: { api_ready_ms: ready, api_rss_mb: rss, task_p99_ms: NOT_MEASURED, tasks_p99_ms: NOT_MEASURED, files_p99_ms: NOT_MEASURED }, read: {} };
    const read = await apiReadAtStart(adminPort);
    // The floor of any lookup on this machine now: the same HTTP round trip to the same process, with no query behind it.
    await p99('GET /healthz (no query: the floor)', () => ({ url: `${base}/healthz`, key: null }), api.pid);
    const task =
      history.sampledTasks.length === 0
        ? NOT_MEASURED
        : await p99(
            'GET /tasks/{id}',
            () => {
              const t = pick(history.sampledTasks);
              return { url: `${base}/api/v1/tasks/${t.task_id}`, key: history.keys[t.user]! };
            },
            api.pid,
          );
    const tasks = await p99('GET /tasks', () => ({ url: `${base}/api/v1/tasks`, key: pick(history.keys) }), api.pid);
    const files =
      fileOwners === 0
        ? NOT_MEASURED
        : await p99('GET /files', () => ({ url: `${base}/api/v1/files`, key: history.keys[Math.floor(Math.random() * fileOwners)]! }), api.pid);
    return { figures: { api_ready_ms: ready, api_rss_mb: rss, task_p99_ms: task, tasks_p99_ms: tasks, files_p99_ms: files }, read };
  } finally {
    await api.stop();
  }
}

/** The ingest worker is ready once its probe listener's /readyz answers 200: its dependencies answer and its consumers joined their groups. */
async function measureIngest(settings: Settings) {
  const port = await freePort();
  const ingest = launch('ingest', { ...settingsEnv(settings), LOG_LEVEL: 'info', MERIDIAN_INGEST_HEALTH_PORT: String(port) });
  try {
    const ready = await untilReady(ingest, () => answers200(`http://127.0.0.1:${port}/readyz`));
    console.log(
      `    ingest: first log line ${showMs(ingest.firstOutputMs())} after spawn, ready ${showMs(ready)} (${showCpu(cpuMsOf(ingest.pid))}); load average ${loadavg()[0]!.toFixed(1)}`,
    );
    return { figures: { ingest_ready_ms: ready, ingest_rss_mb: rssOf(ingest, ready) }, read: ingest.readAtStart() };
  } finally {
    await ingest.stop();
  }
}

/** Why the derived state is not yet current with the log, or null once it is. */
async function notCurrent(platform: Platform): Promise<string | null> {
  const { admin, topics } = platform;
  const readModels = [
    { name: 'tasks', topic: topics.tasks, positions: () => clickhouseTaskReadModel(platform.clickhouseOptions).positions() },
    { name: 'files', topic: topics.files, positions: () => clickhouseFileReadModel(platform.clickhouseOptions).positions() },
  ];
  for (const { name, topic, positions } of readModels) {
    const covered = await positions();
    // A partition's last offset may be a transaction marker, which the projector records too; an empty partition needs nothing.
    const behind = (await admin.fetchTopicOffsets(topic)).filter((p) => Number(p.high) > 0 && (covered.get(p.partition) ?? -1) < Number(p.high) - 1);
    if (behind.length > 0) return `${name} read model behind on ${behind.length} partitions`;
  }
  // Accounts are the one fold kept in memory from a snapshot (files: the read model alone).
  for (const topic of [topics.accounts]) {
    const ends = await admin.fetchTopicOffsets(topic);
    const end = ends.reduce((sum, p) => sum + Number(p.high), 0);
    const newest = (await createSnapshotStore(platform.storage, topic).positions())[0];
    // A snapshot's position is the sum of its next offsets: at the end, short at most of one marker per partition.
    // An empty log (no files written) has nothing to snapshot.
    if (end > 0 && (newest === undefined || newest < end - ends.length)) return `${topic}: newest snapshot ${newest ?? 'none'} of ${end}`;
  }
  return null;
}

/**
 * Brings the scope to the state of a running system: an ingest process that snapshots as soon as
 * it can (every event, at most every second) runs until the tasks and files read models cover
 * their topics and the newest accounts snapshot reaches the log's end; then it stops. Its
 * duration is how long a first start on this history takes to project everything.
 */
async function warmUp(settings: Settings, platform: Platform): Promise<number> {
  const ingest = launch('ingest', { ...settingsEnv(settings), MERIDIAN_SNAPSHOT_EVERY_EVENTS: '1', MERIDIAN_SNAPSHOT_MIN_INTERVAL_MS: '1000' });
  try {
    for (let why: string | null = 'not checked'; ;) {
      const died = ingest.exitReason();
      if (died !== null) throw new Error(`bench: the warm-up ingest ${died}`);
      if (performance.now() - ingest.startedAt > WARM_CAP_MS) throw new Error(`bench: the warm-up did not finish in ${WARM_CAP_MS / 1000} s: ${why}`);
      why = await notCurrent(platform).catch((e: unknown) => String(e));
      if (why === null) return performance.now() - ingest.startedAt;
      await new Promise((r) => setTimeout(r, WARM_POLL_MS));
    }
  } finally {
    await ingest.stop();
  }
}

async function measure(tasks: number): Promise<HistoryRow> {
  // Rate limiting off: the lookups measure the routes, not the per-user token bucket.
  const { settings, base } = await benchApi({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
  const platform = createPlatform(settings, createLogger({ name: 'bench', level: 'warn' }), 'bench');
  try {
    await platform.prepare();
    const fileOwners = Math.min(USERS, Math.ceil(FILES / FILES_PER_OWNER));
    const history = await writeHistory(platform.kafka, platform.admin, platform.topics, `${settings.MERIDIAN_TOPIC_PREFIX}ingest-commands`, {
      users: USERS,
      tasks,
      files: FILES,
      fileOwners,
      sample: REQUESTS,
    });
    console.log(
      `  ${fmt(tasks)} tasks: wrote ${fmt(history.events)} events (${(history.bytes / 1e6).toFixed(0)} MB) in ${(history.ms / 1000).toFixed(1)} s, ${fmt((history.events * 1000) / history.ms)} events/s`,
    );
    const warm = await warmUp(settings, platform);
    console.log(
      `  ${fmt(tasks)} tasks: warm-up ingest projected the tasks and wrote the snapshots in ${(warm / 1000).toFixed(1)} s; load average ${loadavg()[0]!.toFixed(1)}`,
    );
    // What a lookup merges at query time (FINAL): the read models' parts not merged yet.
    const parts = await (
      await platform.clickhouse.query({
        query: `SELECT table, toString(count()) AS n FROM system.parts WHERE active AND database = currentDatabase() AND table IN ('tasks', 'tasks_by_id', 'files', 'file_listing') GROUP BY table ORDER BY table`,
        format: 'JSONEachRow',
      })
    ).json<{ table: string; n: string }>();
    console.log(`  ${fmt(tasks)} tasks: read-model parts ${parts.map((p) => `${p.table} ${p.n}`).join(', ')}`);
    const api = await measureApi(settings, base, history, FILES === 0 ? 0 : fileOwners);
    const ingest = await measureIngest(settings);
    const row: HistoryRow = { tasks, figures: { ...api.figures, ...ingest.figures }, readAtStart: { api: api.read, ingest: ingest.read } };
    console.log(`  ${historyTable([row]).at(-1)!.trim()}`);
    return row;
  } finally {
    await dropScope(platform);
    await platform.close();
  }
}

async function main(): Promise<void> {
  silenceKnownWarnings();
  if (SIZES.some((n) => !Number.isSafeInteger(n) || n < 0))
    throw new Error(`BENCH_HISTORY_SIZES must be comma-separated task counts, not ${process.env.BENCH_HISTORY_SIZES}`);
  console.log(
    `bench-history: ${USERS} users, ${fmt(FILES)} files (${FILES_PER_OWNER} per owner), tasks ${SIZES.map(fmt).join(', ')}; ${REQUESTS} requests per lookup; ready cap ${READY_CAP_MS / 1000} s; load average ${loadavg()[0]!.toFixed(1)} on this shared machine`,
  );
  const rows: HistoryRow[] = [];
  for (const n of SIZES) rows.push(await measure(n));
  console.log(
    `\nbench-history (new api and ingest processes restarted on a log of N finished upload tasks over ${USERS} users and ${fmt(FILES)} files, read model and snapshots current; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; heap: the V8 default here, ${Math.round(getHeapStatistics().heap_size_limit / 2 ** 20)} MB, api with ${API_NODE_FLAGS.join(' ')})`,
  );
  for (const line of historyTable(rows)) console.log(`  ${line}`);
  console.log('\n  goals:');
  for (const g of historyGoals(rows)) console.log(`  ${g.verdict}  ${g.goal}: ${g.detail}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
