import { spawn, execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The user CLI (`meridian upload|download|tasks|files`) as a user runs it: the real bin script
 * as a child process, talking HTTP to a real api and ingest worker on the real stack, with
 * only MERIDIAN_URL and MERIDIAN_API_KEY (or a config file) and none of the services' settings.
 * The api takes one upload body per user at a time, so the CLI's four at once meet 429s.
 */
const settings = isolatedSettings({ MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: '1', LOG_LEVEL: 'info' });
const bin = fileURLToPath(new URL('../../apps/cli/bin/meridian', import.meta.url));
const POINTS = 1_000_000;
const BASE = Date.UTC(2024, 0, 1);

let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let dir: string;
let ada: string;
let bob: string;

type Run = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

function cliEnv(key: string | null, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: join(dir, 'home'),
    MERIDIAN_CLI_POLL_MS: '100',
    ...(key ? { MERIDIAN_URL: api.url, MERIDIAN_API_KEY: key } : {}),
    ...extra,
  };
}

/** Runs the CLI with pipes (no TTY). */
function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(bin, args, { env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, signal: null, stdout, stderr });
    });
  });
}

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** Runs the CLI under a pseudo-terminal (util-linux script): stdout and stderr are the TTY, captured together. */
function cliOnTty(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'script',
      ['-qfec', [bin, ...args].map(quote).join(' '), '/dev/null'],
      { env: { ...env, TERM: 'xterm', COLUMNS: '120' }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, signal: null, stdout, stderr });
      },
    );
  });
}

/** A CSV of `timestamp,value` rows, one a second from BASE + offset seconds. */
async function csvFile(name: string, rows: number, offset = 0, value = (i: number) => String((i % 1000) / 4)): Promise<string> {
  const lines = ['timestamp,value'];
  for (let i = 0; i < rows; i++) lines.push(`${new Date(BASE + (offset + i) * 1000).toISOString().replace('.000Z', 'Z')},${value(i)}`);
  const path = join(dir, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

/** The api's own answer in one request (max_rows past the row count: one page). */
async function wholeDownload(key: string, query: Record<string, string>): Promise<Buffer> {
  const url = new URL(`${api.url}/api/v1/metrics/download`);
  for (const [k, v] of Object.entries({ ...query, max_rows: String(2 * POINTS) })) url.searchParams.set(k, v);
  const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('X-Next-Cursor')).toBeNull();
  return Buffer.from(await res.arrayBuffer());
}

/** Bytes of metric files the api has accepted (its Prometheus counter). */
async function fileBytesAccepted(): Promise<number> {
  const text = await (await fetch(`${api.url}/metrics`)).text();
  return Number(/^meridian_upload_bytes_accepted_total\{source="file"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

const rowsOf = (csv: Buffer | string) => csv.toString().split('\n').filter(Boolean).length - 1;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'meridian-cli-user-'));
  await mkdir(join(dir, 'home'));
  api = await startApi(settings);
  ingest = await startWorker({ ...settings, LOG_LEVEL: 'silent' }); // the api's request log (info) is what the 429 test reads
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  ada = await createUser(api.url, root, 'ada', [{ match: 'prefix', value: 'cli.', access: 'rw' }]);
  bob = await createUser(api.url, root, 'bob', [{ match: 'prefix', value: 'cli.', access: 'r' }]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('meridian upload', () => {
  it('uploads a 1M-point file with a progress bar on a TTY; the task succeeds and the points download', async () => {
    const file = await csvFile('million.csv', POINTS);
    const before = await fileBytesAccepted();
    const run = await cliOnTty(['upload', file, '--metric', 'cli.million'], cliEnv(ada));
    expect(run.code, run.stdout).toBe(0);
    // The bar is drawn in place: erase-line sequences and a filled bar while sending, then the task's rows.
    expect(run.stdout).toContain('\x1b[2K');
    expect(run.stdout).toMatch(/million\.csv {2}sending \[#+-*\] +\d+%/);
    expect(run.stdout).toMatch(/million\.csv {2}(running|succeeded) \[#+-*\] +\d+% \d+\/1000000 rows/);
    expect(run.stdout).toContain(`succeeded: ${POINTS} points stored, 0 rows rejected`);
    // gzip on the wire: the api received (and staged) far fewer bytes than the file holds.
    const sent = (await fileBytesAccepted()) - before;
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThan((await stat(file)).size / 3);

    const csv = await wholeDownload(ada, { metrics: 'cli.million' });
    expect(rowsOf(csv)).toBe(POINTS);
  });

  it('without a TTY draws no bar; --json reports each file for scripts', async () => {
    const file = await csvFile('plain.csv', 10, 0);
    const run = await cli(['upload', file, '--metric', 'cli.plain', '--json'], cliEnv(ada));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('\x1b[');
    const [outcome] = JSON.parse(run.stdout) as Array<{ status: string; result: { points_accepted: number } }>;
    expect(outcome).toMatchObject({ status: 'succeeded', result: { points_accepted: 10 } });
  });

  it('a failed upload exits 1 and prints its row errors', async () => {
    const file = await csvFile('bad.csv', 5, 0, (i) => (i === 2 ? 'not-a-number' : '1'));
    const run = await cli(['upload', file, '--metric', 'cli.bad'], cliEnv(ada));
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/bad\.csv {2}failed/);
    // Row 4 of the file: the header is row 1.
    expect(run.stderr).toMatch(/bad\.csv: row errors\n {2}row 4, value: .+/);
    const after = await cli(['download', '--metrics', 'cli.bad'], cliEnv(ada));
    expect(after.code).not.toBe(0); // nothing of it was stored: the metric does not exist (404)
    expect(after.stderr).toContain('404');

    const skipped = await cli(['upload', file, '--metric', 'cli.bad', '--on-error', 'skip', '--json'], cliEnv(ada));
    expect(skipped.code).toBe(0);
    expect(JSON.parse(skipped.stdout)[0]).toMatchObject({
      status: 'succeeded',
      result: { points_accepted: 4, rows_rejected: 1 },
      errors: [{ row: 4, column: 'value' }],
    });
  });

  it('a rerun of the same upload is the same task and stores nothing twice', async () => {
    const file = await csvFile('twice.csv', 100, 0);
    const first = await cli(['upload', file, '--metric', 'cli.twice', '--json'], cliEnv(ada));
    const second = await cli(['upload', file, '--metric', 'cli.twice', '--json'], cliEnv(ada));
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    const [a] = JSON.parse(first.stdout) as Array<{ task_id: string }>;
    const [b] = JSON.parse(second.stdout) as Array<{ task_id: string }>;
    expect(b!.task_id).toBe(a!.task_id);
    // --no-wait: the task id as soon as the api accepted the file.
    const third = await cli(['upload', file, '--metric', 'cli.twice', '--no-wait', '--json'], cliEnv(ada));
    expect(JSON.parse(third.stdout)).toEqual([expect.objectContaining({ task_id: a!.task_id, status: 'accepted' })]);
    expect(rowsOf(await wholeDownload(ada, { metrics: 'cli.twice' }))).toBe(100);
  });

  it("several files at once: the api's one-body-at-a-time cap answers 429 and the CLI waits and retries", async () => {
    const files = await Promise.all([0, 1, 2, 3].map((k) => csvFile(`many-${k}.csv`, 200_000, k * 200_000)));
    const run = await cli(['upload', ...files, '--metric', 'cli.many', '--json'], cliEnv(ada, { MERIDIAN_CLI_UPLOADS_AT_ONCE: '4' }));
    expect(run.code, run.stderr).toBe(0);
    const outcomes = JSON.parse(run.stdout) as Array<{ status: string }>;
    expect(outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    const refused = api.logs().filter((l) => l.path === '/api/v1/metrics_file_upload' && l.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(rowsOf(await wholeDownload(ada, { metrics: 'cli.many' }))).toBe(800_000);
  });
});

describe('meridian download', () => {
  // The million points of the first test: uploading the same file again is the same task (its
  // Idempotency-Key), so this stores nothing twice, and runs these tests alone (-t) too.
  beforeAll(async () => {
    const run = await cli(['upload', await csvFile('million.csv', POINTS), '--metric', 'cli.million'], cliEnv(ada));
    expect(run.code, run.stderr).toBe(0);
  });

  it("pages joined into one file equal the api's one-page answer, for CSV and JSON", async () => {
    const csvOut = join(dir, 'paged.csv');
    const csv = await cli(['download', '--metrics', 'cli.million', '--page-rows', '150000', '-o', csvOut, '--json'], cliEnv(ada));
    expect(csv.code, csv.stderr).toBe(0);
    expect(JSON.parse(csv.stdout)).toMatchObject({ rows: POINTS, pages: 7, resumed_from_bytes: null });
    expect((await readFile(csvOut)).equals(await wholeDownload(ada, { metrics: 'cli.million' }))).toBe(true);

    const window = { from: '2024-01-01T00:00:00Z', to: '2024-01-01T05:00:00Z' };
    const jsonOut = join(dir, 'paged.json');
    const json = await cli(
      ['download', '--metrics', 'cli.million', '--format', 'json', '--from', window.from, '--to', window.to, '--page-rows', '7000', '-o', jsonOut],
      cliEnv(ada),
    );
    expect(json.code, json.stderr).toBe(0);
    const whole = await wholeDownload(ada, { metrics: 'cli.million', file_format: 'json', start_date: window.from, end_date: window.to });
    expect((await readFile(jsonOut)).equals(whole)).toBe(true);
    expect(JSON.parse(whole.toString())).toHaveLength(5 * 3600 + 1);
  });

  it('an interrupted download resumed with --resume is byte-identical to an uninterrupted one', async () => {
    const expected = await wholeDownload(ada, { metrics: 'cli.million' });
    const out = join(dir, 'resumed.csv');
    const state = `${out}.meridian-resume`;
    // Killed (SIGKILL: no chance to tidy up) as soon as the first page's resume state exists.
    const child = spawn(bin, ['download', '--metrics', 'cli.million', '--page-rows', '50000', '-o', out], { env: cliEnv(ada), stdio: 'ignore' });
    const ended = new Promise<Run>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stdout: '', stderr: '' })));
    await waitFor("the first page's resume state", () => (existsSync(state) ? true : undefined), 60_000, 2);
    child.kill('SIGKILL');
    expect((await ended).signal).toBe('SIGKILL');
    // The pages so far are in the partial file beside the output, which does not exist until the download is complete.
    const partial = `${out}.meridian-partial`;
    expect(existsSync(out)).toBe(false);
    const cut = await readFile(partial);
    expect(cut.length).toBeLessThan(expected.length);
    const saved = JSON.parse(await readFile(state, 'utf8')) as { bytes: number; pages: number };
    expect(saved.pages).toBeGreaterThanOrEqual(1);
    expect(cut.length).toBeGreaterThanOrEqual(saved.bytes);
    // Bytes past the state's (a page in flight when the process died) are not kept: the resume
    // writes from the state's byte on. A torn line makes sure there are some, whenever the kill came.
    await appendFile(partial, 'cli.million,2024-01-01T');

    const resumed = await cli(['download', '--metrics', 'cli.million', '--page-rows', '50000', '-o', out, '--resume', '--json'], cliEnv(ada));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ rows: POINTS, resumed_from_bytes: saved.bytes });
    expect((await readFile(out)).equals(expected)).toBe(true);
    expect(existsSync(state)).toBe(false);
    expect(existsSync(partial)).toBe(false);

    // A resume state of another query is refused, not spliced into this file.
    await writeFile(state, JSON.stringify({ version: 1, query: { metrics: 'cli.other' }, cursor: 'x', bytes: 0, rows: 0, pages: 1 }));
    const other = await cli(['download', '--metrics', 'cli.million', '-o', out, '--resume', '--force'], cliEnv(ada));
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('resume state of another download');
  });
});

describe('meridian tasks and files', () => {
  it("tasks lists the caller's tasks, one by id with its row errors", async () => {
    const bad = await csvFile('bad-task.csv', 3, 0, (i) => (i === 2 ? 'NaNa' : '1'));
    expect((await cli(['upload', bad, '--metric', 'cli.bad-task'], cliEnv(ada))).code).toBe(1);
    const list = await cli(['tasks', '--json'], cliEnv(ada));
    expect(list.code, list.stderr).toBe(0);
    const tasks = JSON.parse(list.stdout) as Array<{ task_id: string; status: string; errors: unknown[] }>;
    const failed = tasks.find((t) => t.status === 'failed')!;
    expect(failed).toBeDefined();
    const one = await cli(['tasks', failed.task_id], cliEnv(ada));
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/failed/);
    expect(one.stdout).toMatch(/row 4, value: /);
    expect(JSON.parse((await cli(['tasks', '--json'], cliEnv(bob))).stdout)).toEqual([]);
  });

  it('tasks --watch --json prints a snapshot per refresh until interrupted', async () => {
    const child = spawn(bin, ['tasks', '--watch', '--json'], { env: cliEnv(ada), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await waitFor('three refreshes', () => (out.split('\n').filter(Boolean).length >= 3 ? true : undefined), 30_000);
    child.kill('SIGINT');
    expect(await ended).toBe('SIGINT');
    const snapshots = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Array<{ task_id: string }>);
    expect(snapshots[0]!.length).toBeGreaterThan(0);
    expect(snapshots[1]).toEqual(snapshots[0]);
  });

  it('files put, ls, get and share', async () => {
    const path = join(dir, 'notes été.txt');
    await writeFile(path, 'hello files\n');
    const put = await cli(['files', 'put', path, '--description', 'notes', '--json'], cliEnv(ada));
    expect(put.code, put.stderr).toBe(0);
    const { file_id } = JSON.parse(put.stdout) as { file_id: string };

    const ls = JSON.parse((await cli(['files', 'ls', '--json'], cliEnv(ada))).stdout) as Array<{ file_id: string; file_description: string }>;
    expect(ls).toEqual([expect.objectContaining({ file_id, file_description: 'notes' })]);
    expect(JSON.parse((await cli(['files', 'ls', '--json'], cliEnv(bob))).stdout)).toEqual([]);

    const shared = await cli(['files', 'share', file_id, 'bob', '--access', 'r'], cliEnv(ada));
    expect(shared.code, shared.stderr).toBe(0);
    const got = join(dir, 'got.txt');
    const get = await cli(['files', 'get', file_id, '-o', got], cliEnv(bob));
    expect(get.code, get.stderr).toBe(0);
    expect(await readFile(got, 'utf8')).toBe('hello files\n');

    expect((await cli(['files', 'share', file_id, 'bob', '--revoke'], cliEnv(ada))).code).toBe(0);
    const gone = await cli(['files', 'get', file_id, '-o', got, '--force'], cliEnv(bob));
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('404');
  });

  it('the connection: flags over MERIDIAN_* over the config file; none at all is a usage error', async () => {
    const config = join(dir, 'xdg', 'meridian', 'config.json');
    await mkdir(join(dir, 'xdg', 'meridian'), { recursive: true });
    await writeFile(config, JSON.stringify({ url: api.url, api_key: ada }));
    const fromFile = await cli(['tasks', '--json'], cliEnv(null, { XDG_CONFIG_HOME: join(dir, 'xdg') }));
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect((JSON.parse(fromFile.stdout) as unknown[]).length).toBeGreaterThan(0);
    // The environment's key (bob's) wins over the file's (ada's); the flag's (ada's) over the environment's.
    const fromEnv = await cli(['tasks', '--json'], cliEnv(null, { XDG_CONFIG_HOME: join(dir, 'xdg'), MERIDIAN_API_KEY: bob }));
    expect(JSON.parse(fromEnv.stdout)).toEqual([]);
    const fromFlag = await cli(['tasks', '--json', '--api-key', ada], cliEnv(null, { XDG_CONFIG_HOME: join(dir, 'xdg'), MERIDIAN_API_KEY: bob }));
    expect((JSON.parse(fromFlag.stdout) as unknown[]).length).toBeGreaterThan(0);

    const none = await cli(['tasks'], cliEnv(null));
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('MERIDIAN_URL');
  });
});
