import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import stackSetup from '../support/global-setup.ts';
import type { StackEndpoints } from '../support/endpoints.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const cache = process.env.MERIDIAN_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'meridian');
/** deploy/local/lib.sh's CHDB_HOME: where `deploy/local/install.sh chdb` puts chdb-core. */
const chdbHome = join(cache, `chdb-${process.env.CHDB_VERSION ?? '26.9.0'}`);

/**
 * The conformance tier's setup: Kafka and MinIO as for the integration tier (environment or
 * local stack), ClickHouse replaced by the test-only HTTP front over chDB (ClickHouse 26.9
 * in-process, test/modern/chdb-front.py) on a free loopback port, with its own data directory.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const python = join(chdbHome, 'bin', 'python');
  if (!existsSync(python)) throw new Error(`chDB is not installed at ${chdbHome}: run deploy/local/install.sh chdb`);
  const data = mkdtempSync(join(tmpdir(), 'meridian-chdb-'));
  const front = spawn(python, [join(here, 'chdb-front.py'), '0', data], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    front.once('error', reject);
    front.once('exit', (code) => reject(new Error(`the chDB front exited (${code}) before it answered`)));
    createInterface({ input: front.stdout }).on('line', (line) => {
      const m = /^ready (\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
    });
  });
  front.removeAllListeners('exit');
  const stop = await stackSetup({
    provide: (key: 'stack', value: StackEndpoints) =>
      project.provide(key, {
        ...value,
        CLICKHOUSE_URL: `http://127.0.0.1:${port}`,
        CLICKHOUSE_USER: 'default',
        CLICKHOUSE_PASSWORD: '',
        CLICKHOUSE_FRONT: 'chdb',
      }),
  } as unknown as TestProject);
  return async () => {
    front.kill('SIGTERM');
    rmSync(data, { recursive: true, force: true });
    await stop();
  };
}
