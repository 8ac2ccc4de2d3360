import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const cache = process.env.MERIDIAN_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'meridian');
/** deploy/local/lib.sh's CHDB_HOME: where `deploy/local/install.sh chdb` puts chdb-core. */
const chdbHome = join(cache, `chdb-${process.env.CHDB_VERSION ?? '26.9.0'}`);

export type ChdbFront = {
  /** The front's HTTP address (loopback, a free port). */
  readonly url: string;
  /** Its data directory, removed by stop(); files put there can be read with INSERT ... FROM INFILE. */
  readonly dataDir: string;
  /** The front's process id: the engine runs in it, so its CPU in /proc is the server's. */
  readonly pid: number;
  stop(): Promise<void>;
};

/**
 * The test-only HTTP front over chDB (ClickHouse 26.9 in-process, chdb-front.py) on a free
 * loopback port with a data directory of its own: the modern tier's ClickHouse, and the
 * current server bench-storage copies `points` into.
 */
export async function startChdbFront(): Promise<ChdbFront> {
  const python = join(chdbHome, 'bin', 'python');
  if (!existsSync(python)) throw new Error(`chDB is not installed at ${chdbHome}: run deploy/local/install.sh chdb`);
  const dataDir = mkdtempSync(join(tmpdir(), 'meridian-chdb-'));
  const front = spawn(python, [join(here, 'chdb-front.py'), '0', dataDir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    front.once('error', reject);
    front.once('exit', (code) => reject(new Error(`the chDB front exited (${code}) before it answered`)));
    createInterface({ input: front.stdout }).on('line', (line) => {
      const m = /^ready (\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
    });
  });
  front.removeAllListeners('exit');
  return {
    url: `http://127.0.0.1:${port}`,
    dataDir,
    pid: front.pid!,
    stop: () =>
      new Promise((resolve) => {
        const done = () => {
          rmSync(dataDir, { recursive: true, force: true });
          resolve();
        };
        if (front.exitCode !== null || front.signalCode !== null) return done();
        // An engine busy in a query may not stop on SIGTERM: it is killed after a while.
        const kill = setTimeout(() => front.kill('SIGKILL'), 10_000);
        front.once('exit', () => {
          clearTimeout(kill);
          done();
        });
        front.kill('SIGTERM');
      }),
  };
}
