import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * On a wiped stack, api and ingest start every time. A fresh Kafka answers
 * "not the leader" / "coordinator loading" for a while after its topics are created; each start
 * must wait that out. The Kafka here is PRIVATE (its own ports and data directory, started with
 * the local stack's own scripts), wiped before every round; ClickHouse and MinIO are the shared
 * ones, with a fresh database and bucket per round. Needs the local stack's Kafka installed
 * (`deploy/local/install.sh`, as `make run` does) and ports 29092-29093 free.
 */
const repo = fileURLToPath(new URL('../../', import.meta.url));
const stackSh = join(repo, 'deploy/local/stack.sh');
const ROUNDS = 5;
const privateVar = mkdtempSync(join(tmpdir(), 'meridian-first-start-'));
const kafkaEnv = { ...process.env, MERIDIAN_VAR: privateVar, KAFKA_PORT: '29092', KAFKA_CONTROLLER_PORT: '29093', KAFKA_HEAP: '384m' };

function stack(cmd: 'up' | 'down'): void {
  const run = spawnSync(stackSh, [cmd, 'kafka'], { env: kafkaEnv, encoding: 'utf8', timeout: 150_000 });
  if (run.status !== 0)
    throw new Error(`the private Kafka could not ${cmd} (needs the local stack installed and ports 29092-29093 free): ${run.stderr.slice(-2000)}`);
}

/** Resolves once `ok` holds, or fails naming what the process printed when it exited or the time ran out. */
async function until(what: string, proc: AppProcess, ok: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`${what}: the process exited with ${proc.child.exitCode}:\n${proc.output().slice(-3000)}`);
    if (await ok()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms:\n${proc.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

afterAll(() => {
  try {
    stack('down');
  } finally {
    rmSync(privateVar, { recursive: true, force: true });
  }
});

describe('a first start on a wiped stack', () => {
  it(`starts api and ingest ${ROUNDS} times in a row, each on a freshly wiped Kafka`, async () => {
    const rounds: Array<{ round: number; kafka_ms: number; apps_ms: number; retries: number }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      stack('down');
      rmSync(join(privateVar, 'kafka'), { recursive: true, force: true });
      expect(existsSync(join(privateVar, 'kafka'))).toBe(false);
      const t0 = Date.now();
      stack('up');
      const t1 = Date.now();
      const port = String(29100 + round);
      const settings = isolatedSettings({ KAFKA_BROKERS: '127.0.0.1:29092', MERIDIAN_API_PORT: port, LOG_LEVEL: 'info' });
      // Both at once, as `make run` starts them: they race to create the same topics.
      const ingest = startApp('ingest', settings);
      const api = startApp('api', settings);
      try {
        await until(`round ${round}: api ready`, api, async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status === 200, 120_000);
        await until(`round ${round}: ingest started`, ingest, () => /projector started/.test(ingest.output()), 120_000);
        expect(api.child.exitCode).toBeNull();
        expect(ingest.child.exitCode).toBeNull();
      } finally {
        await Promise.all([api.stop(), ingest.stop()]);
      }
      // Start-up work that a fresh Kafka answered "not yet" and that was waited out (see untilDone).
      const retries = (api.output() + ingest.output()).split('failed; retrying').length - 1;
      rounds.push({ round, kafka_ms: t1 - t0, apps_ms: Date.now() - t1, retries });
    }
    console.log(
      `first starts on a wiped Kafka (time to start Kafka, then until api ready and ingest running):\n${rounds.map((r) => `  round ${r.round}: kafka ${r.kafka_ms} ms, apps ${r.apps_ms} ms, start-up retries ${r.retries}`).join('\n')}`,
    );
    expect(rounds).toHaveLength(ROUNDS);
  });
});
