import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './ports.ts';
import { waitFor } from './wait.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/** Debian's prometheus and promtool (2.42) as deploy/local/install.sh unpacks them into the cache (installed on first use: seconds). */
export function prometheusBinaries(): { prometheus: string; promtool: string } {
  const where = () =>
    spawnSync('bash', ['-c', '. deploy/local/lib.sh && echo "$PROMETHEUS_BIN" && echo "$PROMTOOL_BIN"'], { cwd: ROOT, encoding: 'utf8' })
      .stdout.trim()
      .split('\n');
  let [prometheus, promtool] = where();
  if (!prometheus || !existsSync(prometheus) || !promtool || !existsSync(promtool)) {
    const installed = spawnSync('deploy/local/install.sh', ['prometheus'], { cwd: ROOT, encoding: 'utf8' });
    if (installed.status !== 0) throw new Error(`install.sh prometheus failed: ${installed.stderr}`);
    [prometheus, promtool] = where();
  }
  return { prometheus: prometheus!, promtool: promtool! };
}

export type RunningPrometheus = { readonly url: string; close(): Promise<void> };

/**
 * A Prometheus on loopback over a TSDB backfilled from OpenMetrics text (`promtool tsdb
 * create-blocks-from openmetrics`): no scraping, every sample from the text, kept for 100 years
 * so old timestamps are never dropped.
 */
export async function startPrometheus(openMetrics: string): Promise<RunningPrometheus> {
  const bins = prometheusBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'meridian-promql-'));
  writeFileSync(join(dir, 'input.om'), openMetrics);
  writeFileSync(join(dir, 'prometheus.yml'), 'global: {}\n');
  const backfill = spawnSync(bins.promtool, ['tsdb', 'create-blocks-from', 'openmetrics', join(dir, 'input.om'), join(dir, 'data')], { encoding: 'utf8' });
  if (backfill.status !== 0) throw new Error(`promtool backfill failed: ${backfill.stderr}${backfill.stdout}`);
  const port = await freePort();
  const child: ChildProcess = spawn(
    bins.prometheus,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      '--storage.tsdb.retention.time=100y',
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    'prometheus ready',
    async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited: ${stderr}`);
      return (
        (await fetch(`${url}/-/ready`).then(
          (r) => r.ok,
          () => false,
        )) || undefined
      );
    },
    60_000,
    100,
  );
  return {
    url,
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Debian's prometheus (from the cache, as prometheusBinaries installs it) scraping one target every second and remote-writing
 * what it scrapes (no metadata, a batch at least every second), its configuration and TSDB in
 * `dir`. Used by the e2e test of the real sender and by the recorder of its fixtures.
 */
export function spawnRemoteWriter(
  dir: string,
  o: { readonly job: string; readonly target: string; readonly writeUrl: string; readonly credentials: string },
  stdio: 'pipe' | 'inherit',
): ChildProcess {
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      'scrape_configs:',
      `  - job_name: ${o.job}`,
      '    static_configs:',
      `      - targets: ['${o.target}']`,
      'remote_write:',
      `  - url: ${o.writeUrl}`,
      '    authorization:',
      `      credentials: ${o.credentials}`,
      '    metadata_config:',
      '      send: false',
      '    queue_config:',
      '      batch_send_deadline: 1s',
      '',
    ].join('\n'),
  );
  return spawn(
    prometheusBinaries().prometheus,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, '--web.listen-address=127.0.0.1:0', '--log.level=warn'],
    { stdio: ['ignore', stdio === 'pipe' ? 'ignore' : 'inherit', stdio] },
  );
}
