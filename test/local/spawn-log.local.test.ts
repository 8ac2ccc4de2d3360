import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * deploy/local/lib.sh's spawn, as stack.sh and cluster.sh use it, with a process that is killed
 * and started again in a temporary directory: the killed run's log survives as NAME.log.1, and
 * the readiness check of the new run (a grep of NAME.log) sees only the new run's lines.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'meridian-spawn-log-'));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Each run writes "run N ready" a second after it starts: a readiness grep that read the
// previous run's log would be satisfied at once, before the new run wrote a line.
const script = `
set -euo pipefail
source deploy/local/lib.sh
RUN_DIR="$DIR"
logfile() { echo "$DIR/$1.log"; }
ready() { grep -q ready "$(logfile "$1")"; }
for n in 1 2 3; do
  spawn proc bash -c "echo run $n starting; sleep 1; echo run $n ready; exec sleep 60"
  wait_ready proc 20
  cp "$(logfile proc)" "$DIR/at-ready-$n"
  kill -KILL "$(alive_pid proc)"
  wait_gone proc 10
  forget proc
done
`;

describe('spawn keeps the log of the previous run', () => {
  it('keeps one generation as NAME.log.1, and the readiness grep reads the new log only', () => {
    const r = spawnSync('bash', ['-c', script], {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DIR: dir },
    });
    expect(r.status, r.stderr).toBe(0);
    for (const n of [1, 2, 3]) expect(readFileSync(join(dir, `at-ready-${n}`), 'utf8')).toBe(`run ${n} starting\nrun ${n} ready\n`);
    expect(readFileSync(join(dir, 'proc.log'), 'utf8')).toBe('run 3 starting\nrun 3 ready\n');
    expect(readFileSync(join(dir, 'proc.log.1'), 'utf8')).toBe('run 2 starting\nrun 2 ready\n');
  });
});
