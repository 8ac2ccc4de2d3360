import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * Fuzzing in CI: schemathesis against the OpenAPI document the api serves, with a real admin
 * key, bounded in time. Any 5xx or any response that violates the documented schema fails.
 * The configuration is test/fuzz/schemathesis.toml; schemathesis itself is installed by
 * deploy/local/install.sh test-tools into a virtualenv in the cache (see SCHEMATHESIS_HOME).
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const config = `${repoRoot}test/fuzz/schemathesis.toml`;
/** Hard ceiling on the run: past it the run is killed and the test fails. */
const RUN_LIMIT_MS = 240_000;

const schemathesisHome = execFileSync('bash', ['-c', 'source deploy/local/lib.sh && printf %s "$SCHEMATHESIS_HOME"'], { cwd: repoRoot, encoding: 'utf8' });
const schemathesis = `${schemathesisHome}/bin/schemathesis`;

// The fuzzer sends far more than a person would: the rate limit is raised so it tests the
// routes rather than the 429 (which it would accept: 429 is documented on every route). It may
// ask for a task it uploaded with a long ?wait: the cap keeps each such answer within a second.
const settings = isolatedSettings({ MERIDIAN_RATE_LIMIT_PER_SECOND: '10000', MERIDIAN_RATE_LIMIT_BURST: '10000', MERIDIAN_TASK_MAX_WAIT_SECONDS: '1' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let adminKey: string;
let spareKeyId: string;

beforeAll(async () => {
  if (!existsSync(schemathesis)) throw new Error(`${schemathesis} is missing: run deploy/local/install.sh schemathesis (make test does)`);
  api = await startApi(settings);
  ingest = await startWorker(settings);
  adminKey = await bootstrapAdmin(settings, 'fuzz-admin');
  await api.api.accounts.syncToEnd();
  // What the destructive operations act on (see test/fuzz/schemathesis.toml): two users and a
  // spare key of the admin, so the fuzzing admin itself is never disabled or revoked.
  await createUser(api.url, adminKey, 'fuzz-victim', []);
  await createUser(api.url, adminKey, 'fuzz-subject', []);
  const spare = await call(`${api.url}/api/v1/api_keys`, adminKey, { method: 'POST' });
  expect(spare.status).toBe(201);
  spareKeyId = spare.json.key_id as string;
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  // Its own scratch directory, so nothing it writes lands in the work tree.
  const cwd = mkdtempSync(join(tmpdir(), 'meridian-fuzz-'));
  return new Promise((resolve) => {
    const child = spawn(schemathesis, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LANG: 'C.UTF-8', ...env },
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
    }, RUN_LIMIT_MS);
    child.once('close', (code) => {
      clearTimeout(timer);
      rmSync(cwd, { recursive: true, force: true });
      resolve({ code, output, timedOut });
    });
  });
}

describe('fuzzing the served OpenAPI document', () => {
  it(
    'schemathesis finds no 5xx and no response that violates the schema',
    async () => {
      const { code, output, timedOut } = await run(['--config-file', config, 'run', `${api.url}/api/v1/openapi.json`, '--url', api.url], {
        MERIDIAN_FUZZ_API_KEY: adminKey,
        MERIDIAN_FUZZ_SPARE_KEY_ID: spareKeyId,
        SCHEMATHESIS_TELEMETRY: 'false',
        NO_COLOR: '1',
      });
      if (code !== 0 || timedOut) {
        process.stdout.write(`\n----- schemathesis output -----\n${output}\n----- end of schemathesis output -----\n`);
        // What the api logged as a warning or an error (a 5xx's cause), by request id.
        const troubles = api.logs().filter((line) => line.level === 'warn' || line.level === 'error' || line.level === 'fatal');
        process.stdout.write(
          `----- api warnings and errors -----\n${troubles.map((line) => JSON.stringify(line)).join('\n')}\n----- end of api warnings and errors -----\n`,
        );
      }
      expect(timedOut, `schemathesis ran longer than ${RUN_LIMIT_MS} ms`).toBe(false);
      expect(output).not.toContain(adminKey); // the key never reaches the output
      expect(code, 'schemathesis exit code (its output is printed above)').toBe(0);
      expect(output).toMatch(/\d+ passed/);
      // The admin kept working all along: no operation was reduced to 401s.
      expect(output).not.toMatch(/Authentication failed/);
    },
    RUN_LIMIT_MS + 30_000,
  );
});
