import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import type { Settings } from '@meridian/config';
import { createLogger, silenceKnownWarnings } from '@meridian/observability';
import { createPlatform, type Platform } from '@meridian/platform';
import { API_NODE_FLAGS } from '../../apps/api/src/node-flags.ts';
import { benchApi, fmt, percentile, repoRoot, settingsEnv } from './common.ts';
import { writeHistory, type WrittenHistory } from './history-log.ts';
import { historyGoals, historyTable, NOT_MEASURED, type Figure, type HistoryRow } from './history-report.ts';

/**
 * make bench-history: does a process get slower or bigger with the log's age? For each size N,
 * on a scope of its own, writes N finished upload tasks (1,000 users, 100k files) straight to
 * the log, then starts a new api process and a new ingest process on it and measures: time from
 * spawn to ready (api: /readyz 200; ingest: both its consumers joined their groups), RSS once
 * ready, and p99 of GET /tasks/{id}, GET /tasks and GET /files. It only writes the log and talks
 * HTTP and procfs, so it measures however the processes keep their state.
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
const READY_POLL_MS = 25;
const MAX_FAILURES = 10;

/** A spawned app: when it became ready (or why it did not), its RSS, and a stop. */
type Launched = { readonly pid: number; readonly startedAt: number; exitReason(): string | null; logged(msg: string): number | undefined; stop(): Promise<void> };

/** Spawns an app as every launcher does (api with API_NODE_FLAGS, no heap flag: the V8 default), keeping its log's messages and its last output. */
function launch(app: 'api' | 'ingest', env: NodeJS.ProcessEnv): Launched {
  const startedAt = performance.now();
  const child = spawn(process.execPath, [...(app === 'api' ? API_NODE_FLAGS : []), `${repoRoot}apps/${app}/src/main.ts`], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const firstLogged = new Map<string, number>();
  let tail = '';
  let partial = '';
  let exitReason: string | null = null;
  const keep = (d: Buffer) => { tail = (tail + d.toString()).slice(-16_384); };
  child.stderr.on('data', keep);
  child.stdout.on('data', (d: Buffer) => {
    keep(d);
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      try {
        const msg = (JSON.parse(line) as { msg?: unknown }).msg;
        if (typeof msg === 'string' && !firstLogged.has(msg)) firstLogged.set(msg, performance.now());
      } catch {
        /* not a log line */
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
    exitReason = /heap out of memory|Allocation failed/i.test(tail) ? 'died: heap' : `died: ${signal ?? `code ${code}`}`;
    resolve();
  }));
  return {
    pid: child.pid!,
    startedAt,
    exitReason: () => exitReason,
    logged: (msg) => firstLogged.get(msg),
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
async function p99(requests: () => { url: string; key: string }): Promise<Figure> {
  const ms: number[] = [];
  let failed = 0;
  for (let i = 0; i < WARMUP + REQUESTS && failed < MAX_FAILURES; i++) {
    const { url, key } = requests();
    const started = performance.now();
    try {
      const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      if (res.status !== 200) failed++;
    } catch {
      failed++;
    }
    if (i >= WARMUP) ms.push(performance.now() - started);
  }
  if (failed > 0) return failed < MAX_FAILURES ? `${failed} of ${WARMUP + REQUESTS} failed` : `stopped: ${failed} failed`;
  return percentile(ms.sort((a, b) => a - b), 99);
}

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

async function measureApi(settings: Settings, base: string, history: WrittenHistory, fileOwners: number) {
  const api = launch('api', settingsEnv(settings));
  try {
    const ready = await untilReady(api, async () => {
      const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1000) }).catch(() => null);
      await res?.arrayBuffer();
      return res?.status === 200 ? performance.now() : undefined;
    });
    const rss = rssOf(api, ready);
    if (typeof ready !== 'number') return { api_ready_ms: ready, api_rss_mb: rss, task_p99_ms: NOT_MEASURED, tasks_p99_ms: NOT_MEASURED, files_p99_ms: NOT_MEASURED };
    const task = history.sampledTasks.length === 0 ? NOT_MEASURED : await p99(() => {
      const t = pick(history.sampledTasks);
      return { url: `${base}/api/v1/tasks/${t.task_id}`, key: history.keys[t.user]! };
    });
    const tasks = await p99(() => ({ url: `${base}/api/v1/tasks`, key: pick(history.keys) }));
    const files = fileOwners === 0 ? NOT_MEASURED : await p99(() => ({ url: `${base}/api/v1/files`, key: history.keys[Math.floor(Math.random() * fileOwners)]! }));
    return { api_ready_ms: ready, api_rss_mb: rss, task_p99_ms: task, tasks_p99_ms: tasks, files_p99_ms: files };
  } finally {
    await api.stop();
  }
}

/** The ingest worker is ready once both its consumers (commands, projector) have joined their groups: they have folded what they need. */
async function measureIngest(settings: Settings) {
  const ingest = launch('ingest', { ...settingsEnv(settings), LOG_LEVEL: 'info' });
  try {
    const ready = await untilReady(ingest, () => {
      const commands = ingest.logged('joined consumer group');
      const projector = ingest.logged('projector joined its consumer group');
      return Promise.resolve(commands !== undefined && projector !== undefined ? Math.max(commands, projector) : undefined);
    });
    return { ingest_ready_ms: ready, ingest_rss_mb: rssOf(ingest, ready) };
  } finally {
    await ingest.stop();
  }
}

/** The scope's topics, database and bucket go once measured: a million tasks are a gigabyte of log on a shared machine. */
async function dropScope(platform: Platform): Promise<void> {
  const { admin, topics, settings, clickhouse, storage } = platform;
  await admin.deleteTopics({ topics: Object.values(topics) }).catch((e: unknown) => console.warn(`bench: topics not deleted: ${String(e)}`));
  await clickhouse.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` }).catch((e: unknown) => console.warn(`bench: database not dropped: ${String(e)}`));
  await storage.client.removeBucket(storage.bucket).catch((e: unknown) => console.warn(`bench: bucket not removed: ${String(e)}`));
}

async function measure(tasks: number): Promise<HistoryRow> {
  // Rate limiting off: the lookups measure the routes, not the per-user token bucket.
  const { settings, base } = benchApi({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
  const platform = createPlatform(settings, createLogger({ name: 'bench', level: 'warn' }), 'bench');
  try {
    await platform.prepare();
    const fileOwners = Math.min(USERS, Math.ceil(FILES / FILES_PER_OWNER));
    const history = await writeHistory(platform.kafka, platform.admin, platform.topics, `${settings.MERIDIAN_TOPIC_PREFIX}ingest-commands`, {
      users: USERS, tasks, files: FILES, fileOwners, sample: REQUESTS,
    });
    console.log(`  ${fmt(tasks)} tasks: wrote ${fmt(history.events)} events (${(history.bytes / 1e6).toFixed(0)} MB) in ${(history.ms / 1000).toFixed(1)} s, ${fmt((history.events * 1000) / history.ms)} events/s`);
    const api = await measureApi(settings, base, history, FILES === 0 ? 0 : fileOwners);
    const ingest = await measureIngest(settings);
    const row = { tasks, figures: { ...api, ...ingest } };
    console.log(`  ${historyTable([row]).at(-1)!.trim()}`);
    return row;
  } finally {
    await dropScope(platform);
    await platform.close();
  }
}

async function main(): Promise<void> {
  silenceKnownWarnings();
  if (SIZES.some((n) => !Number.isSafeInteger(n) || n < 0)) throw new Error(`BENCH_HISTORY_SIZES must be comma-separated task counts, not ${process.env.BENCH_HISTORY_SIZES}`);
  console.log(`bench-history: ${USERS} users, ${fmt(FILES)} files (${FILES_PER_OWNER} per owner), tasks ${SIZES.map(fmt).join(', ')}; ${REQUESTS} requests per lookup; ready cap ${READY_CAP_MS / 1000} s; load average ${loadavg()[0]!.toFixed(1)} on this shared machine`);
  const rows: HistoryRow[] = [];
  for (const n of SIZES) rows.push(await measure(n));
  console.log(`\nbench-history (new api and ingest processes on a log of N finished upload tasks over ${USERS} users and ${fmt(FILES)} files; heap: the V8 default here, ${Math.round(getHeapStatistics().heap_size_limit / 2 ** 20)} MB, api with ${API_NODE_FLAGS.join(' ')})`);
  for (const line of historyTable(rows)) console.log(`  ${line}`);
  console.log('\n  goals:');
  for (const g of historyGoals(rows)) console.log(`  ${g.verdict}  ${g.goal}: ${g.detail}`);
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
