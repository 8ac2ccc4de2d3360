import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.ts';
import { waitFor } from './wait.ts';

/**
 * A single-node VictoriaMetrics (Debian's victoria-metrics, unpacked into the cache by
 * deploy/local/install.sh victoria-metrics, part of its test-tools; or the one built from the Go
 * module proxy for OTLP, victoriaMetricsOtlpBin) on a free loopback port with a temporary data
 * directory: the peer the protocol conformance test reads back from.
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

/**
 * The VictoriaMetrics that reads OTLP (Debian's 1.79 predates it): VICTORIA_METRICS_OTLP_BIN, else
 * where install.sh builds it, as deploy/local/lib.sh names it (the pinned version is said once, there).
 */
export function victoriaMetricsOtlpBin(): string {
  if (process.env.VICTORIA_METRICS_OTLP_BIN) return process.env.VICTORIA_METRICS_OTLP_BIN;
  const lib = fileURLToPath(new URL('../../deploy/local/lib.sh', import.meta.url));
  return execFileSync('bash', ['-c', `. "$1" && printf %s "$VICTORIA_METRICS_OTLP_BIN"`, 'lib', lib], { encoding: 'utf8' });
}

export async function startVictoriaMetricsProcess(
  extraFlags: readonly string[] = [],
  bin = victoriaMetricsBin(),
  install = 'victoria-metrics',
): Promise<VictoriaMetricsProcess> {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run deploy/local/install.sh ${install} (make test installs it with the test tools)`);
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
