import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import type { Readable } from 'node:stream';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.ts';

/**
 * `make run` (deploy/local/run.sh) started again right after a first one was stopped, on a
 * private stack: its own MERIDIAN_VAR and free ports, so the developer's stack (default ports,
 * .var) is never touched. Needs what `make run` needs: the local stack's software in the cache
 * (deploy/local/install.sh all; `make test` has installed it by then) and Node >= 22.18.
 *   1. a TERM of the first run, the second started 0.3 s later: it waits until the first has
 *      stopped what it started, starts those services anew and becomes ready;
 *   2. a kill -9 of the second (no cleanup at all): the third stops the apps it left, adopts its
 *      services and becomes ready with apps of its own;
 *   3. an app of the third dies: the run says so, stops what it started and exits, and leaves
 *      the service it did not start (ClickHouse, started before by stack.sh) running;
 *   4. a TERM of a run whose output is closed: its cleanup still completes.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
type Service = 'kafka' | 'clickhouse' | 'minio';

type Run = {
  child: ChildProcessByStdio<null, Readable, Readable>;
  pid: number;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

let varDir: string;
let env: Record<string, string>;
let ports: Record<string, number>;
let clickhousePid: number;
const runs: Run[] = [];
const timings: string[] = [];

function startRun(): Run {
  // No `detached`: a kill reaches run.sh alone, as `kill PID` from a shell would.
  const child = spawn('bash', ['deploy/local/run.sh'], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString();
  });
  // 'exit', not 'close': after a kill -9 the apps it left keep its pipes open.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const run = { child, pid: child.pid!, output: () => output, exited };
  runs.push(run);
  return run;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tail = (s: string) =>
  s
    .split('\n')
    .filter((l) => !l.startsWith('{'))
    .slice(-40)
    .join('\n');

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
const parentOf = (pid: number) => Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
const pidFile = (name: string) => Number(readFileSync(join(varDir, 'run', `${name}.pid`), 'utf8').trim());

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function stack(...args: string[]): string {
  const r = spawnSync('bash', ['deploy/local/stack.sh', ...args], {
    cwd: repoRoot,
    env,
    encoding: 'utf8',
    timeout: 600_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.status !== 0) throw new Error(`stack.sh ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
function status(): Record<Service, { state: string; pid?: number }> {
  const lines = stack('status')
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/));
  return Object.fromEntries(lines.map(([name, state, , pid]) => [name, { state, pid: pid ? Number(pid) : undefined }])) as Record<
    Service,
    { state: string; pid?: number }
  >;
}

async function readyz(): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${ports.MERIDIAN_API_PORT}/readyz`, { signal: AbortSignal.timeout(5_000) })).status;
  } catch {
    return 0;
  }
}

/**
 * Until this run has printed its banner (after its own readiness wait) and /readyz answers 200
 * from an api that this run started (its child): an api left by an earlier run does not count.
 */
async function becomesReady(run: Run, label: string, timeoutMs = 240_000): Promise<void> {
  const begin = Date.now();
  let exited = false;
  void run.exited.then(() => {
    exited = true;
  });
  while (!run.output().includes('Meridian is running at')) {
    if (exited) throw new Error(`${label} exited before it was ready:\n${tail(run.output())}`);
    if (Date.now() - begin > timeoutMs) throw new Error(`${label} not ready after ${timeoutMs / 1000} s:\n${tail(run.output())}`);
    await sleep(250);
  }
  expect(parentOf(pidFile('api')), `${label}: the api answering is not its own`).toBe(run.pid);
  expect(await readyz()).toBe(200);
  timings.push(`${label}: ready ${((Date.now() - begin) / 1000).toFixed(1)} s after its start`);
}

async function exitOf(run: Run, timeoutMs = 90_000) {
  return Promise.race([
    run.exited,
    sleep(timeoutMs).then(() => {
      throw new Error(`run did not exit in ${timeoutMs / 1000} s:\n${tail(run.output())}`);
    }),
  ]);
}

beforeAll(async () => {
  varDir = mkdtempSync(join(tmpdir(), 'meridian-make-run-'));
  ports = {};
  const taken = new Set<number>();
  for (const name of [
    'KAFKA_PORT',
    'KAFKA_CONTROLLER_PORT',
    'CLICKHOUSE_HTTP_PORT',
    'CLICKHOUSE_TCP_PORT',
    'MINIO_PORT',
    'MINIO_CONSOLE_PORT',
    'MERIDIAN_API_PORT',
  ]) {
    let p = await freePort();
    while (taken.has(p)) p = await freePort();
    taken.add(p);
    ports[name] = p;
  }
  env = {
    // Node >= 22.18 first, as the Makefile puts it (the apps run .ts sources).
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? '',
    ...(process.env.MERIDIAN_CACHE ? { MERIDIAN_CACHE: process.env.MERIDIAN_CACHE } : {}),
    MERIDIAN_VAR: varDir,
    MERIDIAN_API_HOST: '127.0.0.1',
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
  // A service this test starts itself: no make run may stop it.
  stack('up', 'clickhouse');
  clickhousePid = status().clickhouse.pid!;
}, 900_000);

afterAll(async () => {
  if (!varDir) return;
  for (const run of runs) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
  for (const app of ['api', 'ingest']) {
    try {
      const pid = pidFile(app);
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      /* no such file */
    }
  }
  try {
    stack('down');
  } finally {
    rmSync(varDir, { recursive: true, force: true });
    if (timings.length > 0) console.log(`make run on a private stack:\n  ${timings.join('\n  ')}`);
  }
}, 120_000);

describe('make run, started again right after a stop', () => {
  let second: Run;
  let third: Run;

  it('after a TERM of the first run, a second one started 0.3 s later waits for its stop and becomes ready', async () => {
    const first = startRun();
    await becomesReady(first, 'first run');
    const before = status();
    expect(before.kafka.state).toBe('ready');
    expect(before.clickhouse.pid, 'the running ClickHouse is used, not a second one').toBe(clickhousePid);

    first.child.kill('SIGTERM');
    await sleep(300);
    second = startRun();
    const { code } = await exitOf(first);
    expect(code, tail(first.output())).toBe(0);
    // It said what it stopped, and only what it had started.
    expect(first.output()).toMatch(/stopping api and ingest/);
    expect(first.output()).toMatch(/stopping kafka minio \(started by this make run\)/);
    expect(first.output()).toMatch(/leaving clickhouse running \(not started by this make run\)/);
    expect(alive(before.kafka.pid!)).toBe(false);
    expect(alive(before.minio.pid!)).toBe(false);

    // The first one's cleanup (Kafka's shutdown alone) takes longer than 0.3 s.
    expect(second.output()).toMatch(/the previous make run \(pid \d+\) is stopping: waiting until it is done/);
    await becomesReady(second, 'second run (after a TERM of the first)');
    const after = status();
    // Kafka and MinIO are new processes, started after the old ones were gone; ClickHouse the same.
    expect(after.kafka.state).toBe('ready');
    expect(after.kafka.pid).not.toBe(before.kafka.pid);
    expect(after.minio.state).toBe('ready');
    expect(after.minio.pid).not.toBe(before.minio.pid);
    expect(after.clickhouse.pid).toBe(clickhousePid);
  }, 600_000);

  it('after a kill -9 of the second run, a third one stops the apps it left, adopts its services and becomes ready', async () => {
    const before = status();
    const oldApps = [pidFile('api'), pidFile('ingest')];
    second.child.kill('SIGKILL');
    await exitOf(second);
    // No cleanup ran: its apps and services are all still there.
    for (const pid of oldApps) expect(alive(pid)).toBe(true);
    third = startRun();
    await becomesReady(third, 'third run (after a kill -9 of the second)');
    for (const pid of oldApps) expect(alive(pid), `an app of the killed run (pid ${pid}) is still running`).toBe(false);
    expect(third.output()).toMatch(/stopping api ingest left running by a make run that was killed/);
    expect(third.output()).toMatch(/adopting what the killed make run \(pid \d+\) had started: kafka, minio/);
    const after = status();
    expect(after.kafka.pid).toBe(before.kafka.pid);
    expect(after.minio.pid).toBe(before.minio.pid);
  });

  it('when an app dies, the run says so, stops what it started (the adopted services too) and leaves the rest', async () => {
    const before = status();
    const ingest = pidFile('ingest');
    process.kill(pidFile('api'), 'SIGKILL');
    const { code } = await exitOf(third);
    expect(code).not.toBe(0);
    expect(third.output()).toMatch(/api stopped \(exit status 137\): stopping the rest/);
    expect(third.output()).toMatch(/stopping kafka minio \(started by this make run\)/);
    expect(alive(ingest)).toBe(false);
    const after = status();
    expect(after.kafka.state).toBe('stopped');
    expect(after.minio.state).toBe('stopped');
    expect(alive(before.kafka.pid!)).toBe(false);
    expect(alive(before.minio.pid!)).toBe(false);
    for (const port of [ports.KAFKA_PORT!, ports.MINIO_PORT!, ports.MERIDIAN_API_PORT!]) expect(await portOpen(port), `port ${port} still answers`).toBe(false);
    // Not started by any make run: still running, the same process.
    expect(after.clickhouse).toEqual({ state: 'ready', pid: clickhousePid });
    expect(existsSync(join(varDir, 'run', 'make-run.pid')), 'the run left its pid file').toBe(false);
  });

  it('stops what it started on a TERM even when its output is gone (`make run | tee`, tee ended by Ctrl-C)', async () => {
    const fourth = startRun();
    await becomesReady(fourth, 'fourth run (from stopped Kafka and MinIO)');
    const before = status();
    fourth.child.stdout.destroy();
    fourth.child.stderr.destroy();
    fourth.child.kill('SIGTERM');
    await exitOf(fourth);
    const after = status();
    expect(after.kafka.state).toBe('stopped');
    expect(after.minio.state).toBe('stopped');
    expect(alive(before.kafka.pid!)).toBe(false);
    expect(after.clickhouse).toEqual({ state: 'ready', pid: clickhousePid });
    expect(existsSync(join(varDir, 'run', 'make-run.pid')), 'its cleanup did not finish').toBe(false);
  });
});
