import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * The installable command: `make cli-package` builds an npm package, installed here into an empty
 * prefix as `npm install -g` would, then run from a directory outside the repository with a PATH
 * that holds Node and that prefix only.
 */
const repo = fileURLToPath(new URL('../../', import.meta.url));
const settings = isolatedSettings();
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let key: string;
const scratch = mkdtempSync(join(tmpdir(), 'meridian-cli-package-'));
const prefix = join(scratch, 'prefix');
const elsewhere = join(scratch, 'elsewhere');

type Run = { code: number | null; stdout: string; stderr: string };
function run(file: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: options.cwd, env: options.env ?? { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  key = await createUser(api.url, admin, 'packaged', [{ match: 'prefix', value: 'pkg.', access: 'rw' }]);
  const built = await run(process.execPath, [join(repo, 'apps/cli/package/build.ts'), join(scratch, 'build')]);
  expect(built.code, built.stderr).toBe(0);
  const tgz = built.stdout.trim().split('\n').at(-1)!;
  // No dependencies to fetch: the package installs from its file alone.
  const installed = await run('npm', ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tgz]);
  expect(installed.code, installed.stderr).toBe(0);
  rmSync(elsewhere, { recursive: true, force: true });
  await run('mkdir', ['-p', elsewhere]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the meridian command installed from its package', () => {
  // Node and the prefix's bin only: nothing of the repository is on the way.
  const env = () => ({ PATH: `${join(prefix, 'bin')}:${dirname(process.execPath)}`, HOME: scratch, MERIDIAN_URL: api.url, MERIDIAN_API_KEY: key });

  it('prints its version and help from another directory', async () => {
    const { version } = JSON.parse(readFileSync(join(repo, 'apps/cli/package.json'), 'utf8')) as { version: string };
    const v = await run(join(prefix, 'bin/meridian'), ['--version'], { cwd: elsewhere, env: env() });
    expect(v).toMatchObject({ code: 0, stdout: `meridian ${version}\n` });
    const help = await run('meridian', ['help', 'upload'], { cwd: elsewhere, env: env() });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/meridian upload/);
  });

  it('uploads a file and downloads it again from another directory', async () => {
    const csv = Array.from({ length: 500 }, (_, i) => `${formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000)},${i}\n`).join('');
    writeFileSync(join(elsewhere, 'points.csv'), csv);
    const up = await run('meridian', ['upload', 'points.csv', '--metric', 'pkg.cpu'], { cwd: elsewhere, env: env() });
    expect(up.code, up.stderr).toBe(0);
    const down = await run('meridian', ['download', '--metric', 'pkg.cpu', '-o', 'back.csv'], { cwd: elsewhere, env: env() });
    expect(down.code, down.stderr).toBe(0);
    const lines = readFileSync(join(elsewhere, 'back.csv'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(501);
    expect(lines[1]).toMatch(/^pkg\.cpu,2024-01-01T00:00:00\+0000,0,/);
  });
});
