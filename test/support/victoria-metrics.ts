import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { waitFor } from './wait.ts';

/**
 * A single-node VictoriaMetrics (Debian's victoria-metrics, unpacked into the cache by
 * deploy/local/install.sh victoria-metrics, part of its test-tools) on a free loopback port with
 * a temporary data directory: the peer the protocol conformance test reads back from.
 */
export type VictoriaMetricsProcess = {
  readonly base: string;
  /** Its process id (for its CPU time in /proc) and data directory (for its bytes on disk). */
  readonly pid: number;
  readonly dataDir: string;
  stop(): Promise<void>;
};

/** Where install.sh puts the binary (deploy/local/lib.sh), unless VICTORIA_METRICS_BIN says otherwise. */
export function victoriaMetricsBin(): string {
  const cache = process.env.MERIDIAN_CACHE ?? join(homedir(), '.cache', 'meridian');
  return process.env.VICTORIA_METRICS_BIN ?? join(cache, 'victoria-metrics', 'usr', 'bin', 'victoria-metrics');
}

export async function startVictoriaMetricsProcess(extraFlags: readonly string[] = [], bin = victoriaMetricsBin()): Promise<VictoriaMetricsProcess> {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run deploy/local/install.sh victoria-metrics (make test installs it with the test tools)`);
  const dataDir = mkdtempSync(join(tmpdir(), 'meridian-vm-'));
  const port = await freePort();
  const child = spawn(
    bin,
    [
      `-storageDataPath=${dataDir}`,
      `-httpListenAddr=127.0.0.1:${port}`,
      '-retentionPeriod=100y', // fixtures may be older than the default month
      '-search.disableCache', // a read right after a write must see it
      '-loggerLevel=ERROR',
      ...extraFlags,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitFor('VictoriaMetrics to start', async () => ((await fetch(`${base}/health`)).ok ? true : undefined), 60_000, 100);
  } catch (error) {
    await stop();
    throw error;
  }
  return { base, pid: child.pid!, dataDir, stop };
}
