import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningApi } from '../support/api.ts';
import { meridianBin, userCli, type CliRun } from '../support/cli.ts';
import { isolatedSettings } from '../support/settings.ts';
import type { SilentServer } from '../support/silent-server.ts';
import { startCliWorld, type CliWorld } from '../support/cli-world.ts';
import { waitFor } from '../support/wait.ts';

/**
 * What the user CLI does to the files it writes (download -o, files get): the real bin script
 * against a real api and ingest worker. A failed or interrupted command never touches a file that
 * was there; an existing file is replaced only with --force, and only by a complete download.
 */
const settings = isolatedSettings();
const POINTS = 100_000;
const BASE = Date.UTC(2024, 0, 1);
const PRECIOUS = 'precious bytes, not a download\n'.repeat(1000);

let api: RunningApi;
let world: CliWorld | undefined;
let dir: string;
let ada: string;
/** A port nothing listens on: connection refused. */
let downUrl: string;
/** A server that accepts connections and never answers. */
let silent: SilentServer;

const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  HOME: join(dir, 'home'),
  MERIDIAN_URL: api.url,
  MERIDIAN_API_KEY: ada,
  ...extra,
});
const cli = (args: string[], extra: Record<string, string> = {}, cwd?: string) => userCli(args, env(extra), cwd);

/** Starts the CLI, waits until `ready` holds, sends SIGINT and returns how it ended. */
async function interrupted(args: string[], ready: () => boolean, extra: Record<string, string> = {}): Promise<CliRun> {
  const child = spawn(meridianBin, args, { env: env(extra), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const ended = new Promise<CliRun>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  await waitFor('the CLI to be under way', () => (ready() ? true : undefined), 60_000, 5);
  child.kill('SIGINT');
  return ended;
}

/** The file as it was put there, byte for byte, and nothing the CLI left beside it. */
async function expectUntouched(path: string): Promise<void> {
  expect(await readFile(path, 'utf8')).toBe(PRECIOUS);
  const leftovers = (await readdir(dir)).filter((f) => f.includes('.meridian-'));
  expect(leftovers).toEqual([]);
}

async function wholeDownload(query: Record<string, string>): Promise<Buffer> {
  const url = new URL(`${api.url}/api/v1/metrics/download`);
  for (const [k, v] of Object.entries({ ...query, max_rows: String(2 * POINTS) })) url.searchParams.set(k, v);
  const res = await fetch(url, { headers: { Authorization: `Bearer ${ada}` } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

beforeAll(async () => {
  world = await startCliWorld(settings, 'cli-output', 'out.');
  ({ dir, api, key: ada, downUrl, silent } = world);

  const lines = ['timestamp,value'];
  for (let i = 0; i < POINTS; i++) lines.push(`${new Date(BASE + i * 1000).toISOString()},${i % 100}`);
  await writeFile(join(dir, 'points.csv.src'), `${lines.join('\n')}\n`);
  const up = await cli(['upload', join(dir, 'points.csv.src'), '--metric', 'out.points']);
  expect(up.code, up.stderr).toBe(0);
  await rm(join(dir, 'points.csv.src'));
});
afterAll(async () => {
  await world?.close();
});

let precious: string;
beforeEach(async () => {
  for (const f of await readdir(dir)) if (f !== 'home') await rm(join(dir, f), { recursive: true, force: true });
  precious = join(dir, 'precious.csv');
  await writeFile(precious, PRECIOUS);
});

describe('a failed download leaves an existing file as it was', () => {
  it('a metric that does not exist (404)', async () => {
    const run = await cli(['download', '--metrics', 'out.nothing', '-o', precious, '--force']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('404');
    await expectUntouched(precious);
  });

  it('a bad --from', async () => {
    const run = await cli(['download', '--metrics', 'out.points', '--from', 'yesterday-ish', '-o', precious, '--force']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--from "yesterday-ish"');
    await expectUntouched(precious);
  });

  it('a server that is down', async () => {
    const run = await cli(['download', '--metrics', 'out.points', '-o', precious, '--force'], { MERIDIAN_URL: downUrl, MERIDIAN_CLI_RETRIES: '1' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('ECONNREFUSED');
    await expectUntouched(precious);
  });

  it('without --force an existing file is refused before any request, and --force replaces it once complete', async () => {
    const refused = await cli(['download', '--metrics', 'out.points', '-o', precious]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${precious} already exists; pass --force to replace it`);
    await expectUntouched(precious);
    // Before any request: a server that is down is not even asked.
    expect((await cli(['download', '--metrics', 'out.points', '-o', precious], { MERIDIAN_URL: downUrl })).stderr).toContain('already exists');

    const forced = await cli(['download', '--metrics', 'out.points', '-o', precious, '--force', '--page-rows', '30000']);
    expect(forced.code, forced.stderr).toBe(0);
    expect((await readFile(precious)).equals(await wholeDownload({ metrics: 'out.points' }))).toBe(true);
    expect((await readdir(dir)).filter((f) => f.includes('.meridian-'))).toEqual([]);
  });

  it('Ctrl-C before the first page removes the partial file; the target is untouched', async () => {
    const before = silent.connections;
    const run = await interrupted(['download', '--metrics', 'out.points', '-o', precious, '--force'], () => silent.connections > before, {
      MERIDIAN_URL: silent.url,
    });
    expect(run.signal).toBe('SIGINT');
    expect(run.stderr).toContain(`interrupted; nothing was written to ${precious}`);
    await expectUntouched(precious);
  });

  it('Ctrl-C after some pages keeps them beside the target for --resume, which then replaces it', async () => {
    const state = `${precious}.meridian-resume`;
    // A relative --from resolves anew on the resumed run: the resume still matches, and sends the first run's time.
    const args = ['download', '--metrics', 'out.points', '--from', '-99999d', '-o', precious, '--force', '--page-rows', '1000'];
    const run = await interrupted(args, () => existsSync(state));
    expect(run.signal).toBe('SIGINT');
    expect(run.stderr).toContain('run the same command with --resume');
    expect(await readFile(precious, 'utf8')).toBe(PRECIOUS);
    expect(existsSync(`${precious}.meridian-partial`)).toBe(true);

    const resumed = await cli([...args, '--resume', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ rows: POINTS, resumed_from_bytes: expect.any(Number) });
    expect((await readFile(precious)).equals(await wholeDownload({ metrics: 'out.points' }))).toBe(true);
    expect((await readdir(dir)).filter((f) => f.includes('.meridian-'))).toEqual([]);
  });
});

describe('files get follows the same rule', () => {
  let fileId: string;
  beforeAll(async () => {
    const source = join(dir, 'home', 'report.txt');
    await writeFile(source, 'the report\n');
    const put = await cli(['files', 'put', source, '--json']);
    expect(put.code, put.stderr).toBe(0);
    fileId = (JSON.parse(put.stdout) as { file_id: string }).file_id;
  });

  it('refuses an existing -o FILE and an existing file of its own name without --force; --force replaces', async () => {
    const refused = await cli(['files', 'get', fileId, '-o', precious]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('already exists; pass --force');
    await expectUntouched(precious);

    // No -o: the file's own name in the current directory, refused the same way (not a raw EEXIST).
    await writeFile(join(dir, 'report.txt'), PRECIOUS);
    const own = await cli(['files', 'get', fileId], {}, dir);
    expect(own.code).toBe(1);
    expect(own.stderr).toContain('report.txt already exists; pass --force to replace it');
    expect(await readFile(join(dir, 'report.txt'), 'utf8')).toBe(PRECIOUS);
    const ownForced = await cli(['files', 'get', fileId, '--force'], {}, dir);
    expect(ownForced.code, ownForced.stderr).toBe(0);
    expect(await readFile(join(dir, 'report.txt'), 'utf8')).toBe('the report\n');

    const forced = await cli(['files', 'get', fileId, '-o', precious, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(await readFile(precious, 'utf8')).toBe('the report\n');
    expect((await readdir(dir)).filter((f) => f.includes('.meridian-'))).toEqual([]);
  });

  it('a file that does not exist, a server that is down, and Ctrl-C leave the target untouched', async () => {
    const missing = await cli(['files', 'get', '00000000-0000-4000-8000-000000000000', '-o', precious, '--force']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('404');
    await expectUntouched(precious);

    const down = await cli(['files', 'get', fileId, '-o', precious, '--force'], { MERIDIAN_URL: downUrl, MERIDIAN_CLI_RETRIES: '1' });
    expect(down.code).toBe(2);
    await expectUntouched(precious);

    const before = silent.connections;
    const run = await interrupted(['files', 'get', fileId, '-o', precious, '--force'], () => silent.connections > before, { MERIDIAN_URL: silent.url });
    expect(run.signal).toBe('SIGINT');
    await expectUntouched(precious);
  });
});
