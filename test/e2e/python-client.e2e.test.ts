import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * The Python client (clients/python) against a real api and ingest: its pytest suite, run from
 * the pinned virtualenv that deploy/local/install.sh python-client makes in the cache (part of
 * test-tools, so make test installs it), with the client imported from this work tree. Then
 * `pip install clients/python` into a fresh virtualenv, offline, from the wheels kept beside it.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const clientRoot = `${repoRoot}clients/python`;
const venv = execFileSync('bash', ['-c', 'source deploy/local/lib.sh && printf %s "$PYTHON_CLIENT_HOME"'], { cwd: repoRoot, encoding: 'utf8' });
const python = `${venv}/bin/python`;
/** Hard ceiling on the pytest run (the 1M-row round trip is most of it): past it the run is killed and the test fails. */
const PYTEST_LIMIT_MS = 900_000;
const INSTALL_LIMIT_MS = 240_000;
/** The metrics the test user may write and read: every test's names start with it. */
const PREFIX = 'pyclient.';
const RATE = { perSecond: 20, burst: 40 };

let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let userKey: string;
let scratch: string;

beforeAll(async () => {
  if (!existsSync(`${venv}/.complete`)) throw new Error(`${venv} is missing or incomplete: run deploy/local/install.sh python-client (make test does)`);
  scratch = mkdtempSync(join(tmpdir(), 'meridian-pyclient-'));
  // A low rate limit, so that test_rate_limit.py meets 429s with Retry-After (the suite's own
  // traffic fits under it, and the client retries any 429 it meets).
  const settings = isolatedSettings({ MERIDIAN_RATE_LIMIT_PER_SECOND: String(RATE.perSecond), MERIDIAN_RATE_LIMIT_BURST: String(RATE.burst) });
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const adminKey = await bootstrapAdmin(settings, 'pyclient-admin');
  await api.api.accounts.syncToEnd();
  userKey = await createUser(api.url, adminKey, 'pyclient', [{ match: 'prefix', value: PREFIX, access: 'rw' }]);
  await createUser(api.url, adminKey, 'pyclient-peer', []);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

type Run = { code: number | null; output: string; timedOut: boolean };

/** Runs a program with only the environment given (no developer's MERIDIAN_* or config file), its output kept. */
function run(program: string, args: string[], env: Record<string, string>, limitMs: number, cwd = scratch): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(program, args, {
      cwd,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        LANG: 'C.UTF-8',
        XDG_CONFIG_HOME: join(scratch, 'config'),
        PYTHONDONTWRITEBYTECODE: '1',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, limitMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, timedOut });
    });
  });
}

const serviceEnv = () => ({
  MERIDIAN_URL: api.url,
  MERIDIAN_API_KEY: userKey,
  MERIDIAN_TEST_PREFIX: PREFIX,
  MERIDIAN_TEST_PEER: 'pyclient-peer',
  MERIDIAN_TEST_RATE_PER_SECOND: String(RATE.perSecond),
  MERIDIAN_TEST_RATE_BURST: String(RATE.burst),
});

describe('the Python client against the real api', () => {
  it(
    'its pytest suite passes (1M-row DataFrame round trip included)',
    async () => {
      const started = Date.now();
      // The client from this work tree (PYTHONPATH), not installed into the shared cached virtualenv.
      const { code, output, timedOut } = await run(
        python,
        [
          '-m',
          'pytest',
          '-c',
          `${clientRoot}/pyproject.toml`,
          '--rootdir',
          clientRoot,
          '-p',
          'no:cacheprovider',
          '-q',
          '-rA',
          '--durations=5',
          `${clientRoot}/tests`,
        ],
        { ...serviceEnv(), PYTHONPATH: `${clientRoot}/src` },
        PYTEST_LIMIT_MS,
        // From the client's directory, so tests are named tests/…; no cache or bytecode is written there.
        clientRoot,
      );
      // Each test's outcome, the timings the round trip prints, the slowest tests and pytest's closing line.
      const summary = output
        .trimEnd()
        .split('\n')
        .filter((line) => /^(PASSED|FAILED|ERROR|SKIPPED)\b|^1M rows:|^\d+\.\d+s (call|setup)|\d+ (passed|failed|error)/.test(line));
      process.stdout.write(
        `\n----- pytest (clients/python), ${((Date.now() - started) / 1000).toFixed(0)} s -----\n${code === 0 && !timedOut ? summary.join('\n') : output}\n----- end of pytest -----\n`,
      );
      expect(output).not.toContain(userKey); // the key never reaches the output
      expect(timedOut, `pytest ran longer than ${PYTEST_LIMIT_MS} ms`).toBe(false);
      expect(code, 'pytest exit status (its output is printed above)').toBe(0);
      expect(output).toMatch(/\d+ passed/);
    },
    PYTEST_LIMIT_MS + 30_000,
  );

  it(
    'pip install clients/python works in a fresh virtualenv, offline, and the installed client talks to the api',
    async () => {
      const fresh = join(scratch, 'fresh-venv');
      const made = await run(python, ['-m', 'venv', fresh], {}, 60_000);
      expect(made.code, made.output).toBe(0);
      // Only the wheels kept beside the test virtualenv: no index, so nothing comes from the registry.
      const installed = await run(
        `${fresh}/bin/pip`,
        ['install', '--disable-pip-version-check', '--no-index', '--find-links', `${venv}/wheels`, clientRoot],
        {},
        INSTALL_LIMIT_MS,
      );
      expect(installed.code, installed.output).toBe(0);
      const smoke = await run(
        `${fresh}/bin/python`,
        [
          '-c',
          'import importlib.metadata as m, meridian_client as c; print(m.version("meridian-metrics-client"), c.__version__); print(len(c.Client().tasks(limit=5)) >= 0)',
        ],
        serviceEnv(),
        60_000,
      );
      expect(smoke.code, smoke.output).toBe(0);
      expect(smoke.output).toMatch(/^0\.1\.0 0\.1\.0\nTrue$/m);
    },
    INSTALL_LIMIT_MS + 150_000,
  );
});
