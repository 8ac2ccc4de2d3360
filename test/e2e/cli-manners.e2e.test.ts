import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApi } from '../support/api.ts';
import { meridianBin, userCli, type CliRun } from '../support/cli.ts';
import { isolatedSettings } from '../support/settings.ts';
import type { SilentServer } from '../support/silent-server.ts';
import { startCliWorld, type CliWorld } from '../support/cli-world.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The user CLI's manners, as a user meets them: help and version, mistakes told in the CLI's
 * own words before any byte is sent, an api that cannot be reached told at once, relative
 * times, the catalog, files info/rm, task filters and --wait, a re-upload that stored nothing.
 * The real bin script against a real api and ingest worker on the stack.
 */
const settings = isolatedSettings();
const HOUR = 3_600_000;

let api: RunningApi;
let world: CliWorld | undefined;
let dir: string;
let ada: string;
let downUrl: string;
let silent: SilentServer;

const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  HOME: join(dir, 'home'),
  MERIDIAN_URL: api.url,
  MERIDIAN_API_KEY: ada,
  MERIDIAN_CLI_POLL_MS: '100',
  ...extra,
});
const cli = (args: string[], extra: Record<string, string> = {}) => userCli(args, env(extra));

async function csv(name: string, lines: string[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

beforeAll(async () => {
  world = await startCliWorld(settings, 'cli-manners', 'mn.');
  ({ dir, api, key: ada, downUrl, silent } = world);
});
afterAll(async () => {
  await world?.close();
});

describe('help and version', () => {
  it("--help, -h, help and COMMAND --help answer on stdout with exit 0; --version is the package's", async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const run = await cli(args);
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stdout).toContain('usage: meridian COMMAND');
    }
    const download = await cli(['download', '--help']);
    expect(download.code).toBe(0);
    expect(download.stdout).toContain('usage: meridian download');
    expect(download.stdout).toContain('Examples:');
    const version = await cli(['--version']);
    const pkg = JSON.parse(await readFile(new URL('../../apps/cli/package.json', import.meta.url), 'utf8')) as { version: string };
    expect(version).toMatchObject({ code: 0, stdout: `meridian ${pkg.version}\n` });
    const unknown = await cli(['download', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("meridian: unknown option --bogus\nRun 'meridian download --help' for usage.\n");
  });
});

describe('mistakes found before any byte is sent', () => {
  // Against an address where nothing listens: any request would end in "cannot reach".
  it('an invalid --metric and a CSV whose rows name no metric, without --metric', async () => {
    const file = await csv('plain.csv', ['timestamp,value', '2024-01-01T00:00:00Z,1']);
    const bad = await cli(['upload', file, '--metric', '=cmd'], { MERIDIAN_URL: downUrl });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--metric "=cmd" is not a valid metric name');
    expect(bad.stderr).not.toContain('cannot reach');
    const unnamed = await cli(['upload', file], { MERIDIAN_URL: downUrl });
    expect(unnamed.code).toBe(2);
    expect(unnamed.stderr).toContain('its rows do not name their metric');
    expect(unnamed.stderr).toContain('pass --metric NAME');
    expect(unnamed.stderr).not.toContain('cannot reach');
    // A file in the download layout names its metric on each row: no --metric needed.
    const named = await csv('named.csv', [
      'metric_name,timestamp,metric_numeric_value,updated_at',
      'mn.named,2024-01-01T00:00:00+0000,1,2024-01-01T00:00:00+0000',
    ]);
    const ok = await cli(['upload', named, '--json']);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it("a bad --from is a usage error naming --from; the api's refusals name the flags, not start_date", async () => {
    const bad = await cli(['download', '--metric', 'mn.named', '--from', 'yesterday'], { MERIDIAN_URL: downUrl });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--from "yesterday": expected a date');
    const reversed = await cli(['download', '--metric', 'mn.named', '--from', '2024-02-01', '--to', '2024-01-01']);
    expect(reversed.code).toBe(1);
    expect(reversed.stderr).toContain('--from');
    expect(reversed.stderr).not.toMatch(/start_date|end_date/);
  });
});

describe('an api that cannot be reached', () => {
  it('connection refused is told at once, each retry as "retrying n/N", and exits 2', async () => {
    const started = Date.now();
    const child = spawn(meridianBin, ['tasks'], { env: env({ MERIDIAN_URL: downUrl, MERIDIAN_CLI_RETRIES: '3' }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let firstLineAfter = -1;
    child.stderr.on('data', (c: Buffer) => {
      if (firstLineAfter < 0) firstLineAfter = Date.now() - started;
      stderr += c.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain(`cannot reach ${downUrl}: ECONNREFUSED; retrying 1/3`);
    expect(stderr).toContain('retrying 3/3');
    // Told before the first wait, not after all of them (a fresh Node start takes about a second).
    expect(firstLineAfter).toBeLessThan(Date.now() - started - 1000);
  });

  it('Ctrl-C during an upload says how to resume', async () => {
    const file = await csv('slow.csv', ['timestamp,value', '2024-01-01T00:00:00Z,1']);
    const before = silent.connections;
    const child = spawn(meridianBin, ['upload', file, '--metric', 'mn.slow'], { env: env({ MERIDIAN_URL: silent.url }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const ended = new Promise<CliRun>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout: '', stderr })));
    await waitFor('the upload to be under way', () => (silent.connections > before ? true : undefined), 30_000, 5);
    child.kill('SIGINT');
    expect((await ended).signal).toBe('SIGINT');
    expect(stderr).toContain('interrupted; to resume, run the same command again');
  });
});

describe('relative times, the catalog, files and tasks', () => {
  let recent: string;
  beforeAll(async () => {
    // A point every minute for the last three hours (whole minutes, all before now).
    const now = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
    const lines = ['timestamp,value'];
    for (let t = now - 3 * HOUR + 60_000; t <= now; t += 60_000) lines.push(`${new Date(t).toISOString()},1`);
    recent = await csv('recent.csv', lines);
    const run = await cli(['upload', recent, '--metric', 'mn.recent']);
    expect(run.code, run.stderr).toBe(0);
  });

  it('--from -1h and --from now-7d', async () => {
    const hour = await cli(['download', '--metric', 'mn.recent', '--from', '-1h']);
    expect(hour.code, hour.stderr).toBe(0);
    const rows = hour.stdout.trim().split('\n').length - 1;
    expect(rows).toBeGreaterThanOrEqual(59);
    expect(rows).toBeLessThanOrEqual(61);
    const week = await cli(['download', '--metrics', 'mn.recent', '--from', 'now-7d', '--to', 'now']);
    expect(week.stdout.trim().split('\n').length - 1).toBe(180);
  });

  it('metrics ls lists the catalog', async () => {
    const json = await cli(['metrics', 'ls', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const list = JSON.parse(json.stdout) as Array<{ metric_name: string; points: number }>;
    expect(list).toEqual(expect.arrayContaining([expect.objectContaining({ metric_name: 'mn.recent', points: 180 })]));
    const text = await cli(['metrics', 'ls', '--metric', 'mn.rec', '--pattern', 'starts_with']);
    expect(text.stdout).toMatch(/^mn\.recent +180 points {2}\S+ {2}\S+\n$/);
  });

  it('a re-upload of the same file says it stored nothing new', async () => {
    await sleep(1500); // a rerun within a second of the first upload is not told apart
    const again = await cli(['upload', recent, '--metric', 'mn.recent']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('succeeded: already uploaded, nothing new stored');
    const json = await cli(['upload', recent, '--metric', 'mn.recent', '--json']);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ already_uploaded: true })]);
    const fresh = await cli(['upload', await csv('fresh.csv', ['timestamp,value', '2024-01-01T00:00:00Z,1']), '--metric', 'mn.fresh', '--json']);
    expect(JSON.parse(fresh.stdout)).toEqual([expect.objectContaining({ status: 'succeeded', already_uploaded: false })]);
  });

  it('files info and rm', async () => {
    const source = await csv('doc.txt', ['a document']);
    const put = await cli(['files', 'put', source, '--json']);
    const { file_id } = JSON.parse(put.stdout) as { file_id: string };
    const info = await cli(['files', 'info', file_id, '--json']);
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ file_id, file_name: 'doc.txt', size: 11, user_name: 'ada' });
    expect((await cli(['files', 'info', file_id])).stdout).toContain('size         11 bytes');
    const removed = await cli(['files', 'rm', file_id]);
    expect(removed).toMatchObject({ code: 0, stdout: `deleted ${file_id}\n` });
    const gone = await cli(['files', 'info', file_id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('404');
  });

  it("tasks --status and --kind filter; tasks ID --wait and --watch end with the task's result", async () => {
    const bad = await csv('bad.csv', ['timestamp,value', '2024-01-01T00:00:00Z,nope']);
    const failedRun = await cli(['upload', bad, '--metric', 'mn.bad', '--no-wait', '--json']);
    const failedId = (JSON.parse(failedRun.stdout) as Array<{ task_id: string }>)[0]!.task_id;
    const waited = await cli(['tasks', failedId, '--wait']);
    expect(waited.code).toBe(1);
    expect(waited.stdout).toMatch(/failed/);
    const okRun = await cli(['upload', recent, '--metric', 'mn.recent', '--no-wait', '--json']);
    const okId = (JSON.parse(okRun.stdout) as Array<{ task_id: string }>)[0]!.task_id;
    expect((await cli(['tasks', okId, '--wait', '--json'])).code).toBe(0);
    // --watch of a task that has ended stops, with its result.
    expect((await cli(['tasks', failedId, '--watch'])).code).toBe(1);

    const failed = JSON.parse((await cli(['tasks', '--status', 'failed', '--json'])).stdout) as Array<{ task_id: string; status: string }>;
    expect(failed.map((t) => t.task_id)).toContain(failedId);
    expect(failed.every((t) => t.status === 'failed')).toBe(true);
    const definitions = JSON.parse((await cli(['tasks', '--kind', 'file_definition', '--json'])).stdout) as Array<{ kind: string }>;
    expect(definitions.length).toBeGreaterThan(0);
    expect(definitions.every((t) => t.kind === 'file_definition')).toBe(true);
    const wrong = await cli(['tasks', '--status', 'done']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--status is one of queued, running, succeeded, failed');
  });
});
