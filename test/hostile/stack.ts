import { settingDefinitions, type Settings } from '@meridian/config';
import { withTimeout } from '@meridian/observability';
import { createStorage, type Storage } from '@meridian/storage';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call } from '../support/api.ts';
import { freePort } from '../support/ports.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { csvPoints, uploadFile } from '../support/uploads.ts';
import { waitFor } from '../support/wait.ts';

/** What every hostile case is held to afterwards (the "After each"). */
export const AFTER_EACH = { healthzMs: 100, canaryPoints: 1000, canaryMs: 5000 } as const;

export type Checks = { healthzMs: number; ingestPid: number; ingestSamePid: boolean; canaryMs: number | null; failures: string[] };

/**
 * The real stack of the hostile tier: an api and an ingest process (as `make run` starts them)
 * on the run's own topics, database and bucket, an admin, and a canary user whose 1k-point
 * upload must stay queryable within 5 s whatever the other cases throw at the service.
 */
export class HostileStack {
  readonly settings: Settings;
  readonly storage: Storage;
  /** Settings given to the processes: the lowered bounds (some are not known on every branch, see unknownSettings). */
  readonly env: Record<string, string>;
  api!: AppProcess;
  ingest!: AppProcess;
  apiUrl = '';
  adminKey = '';
  private canaryKey = '';
  private canaries = 0;
  /** Every app process started, for stop(). */
  private readonly started: AppProcess[] = [];

  constructor(env: Record<string, string>) {
    this.settings = isolatedSettings();
    this.env = { LOG_LEVEL: 'warn', ...env };
    this.storage = createStorage({
      endpoint: this.settings.S3_ENDPOINT,
      accessKey: this.settings.S3_ACCESS_KEY,
      secretKey: this.settings.S3_SECRET_KEY,
      region: this.settings.S3_REGION,
      bucket: this.settings.S3_BUCKET,
    });
  }

  /** The settings this tier lowers or raises that this build does not know (their feature is not in it). */
  unknownSettings(extra: Record<string, string> = {}): string[] {
    return Object.keys({ ...this.env, ...extra }).filter((name) => !(name in settingDefinitions));
  }

  async start(): Promise<void> {
    // A test worker that ends before afterAll ran (a timed-out hook) must not leave its apps running.
    process.once('exit', () => {
      for (const p of this.started) p.child.kill('SIGKILL');
    });
    const port = await freePort();
    this.apiUrl = `http://127.0.0.1:${port}`;
    this.api = this.spawn('api', { MERIDIAN_API_PORT: String(port) });
    this.ingest = this.spawn('ingest');
    await waitForReady(this.apiUrl, this.api);
    this.adminKey = await bootstrapAdmin(this.settings);
    await waitFor(
      'the api to know the admin',
      async () => ((await call(`${this.apiUrl}/api/v1/users`, this.adminKey)).status === 200 ? true : undefined),
      30_000,
      100,
    );
    this.canaryKey = await this.user('canary', [{ match: 'prefix', value: 'canary.', access: 'rw' }]);
  }

  /** Another api process on the same topics, with settings of its own (e.g. a lowered idle timeout). */
  async startExtraApi(env: Record<string, string>): Promise<{ url: string; process: AppProcess }> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const process = this.spawn('api', { ...env, MERIDIAN_API_PORT: String(port) });
    await waitForReady(url, process);
    return { url, process };
  }

  /** A user with these metric rules (none: a user who may write nothing); its key. */
  user(name: string, rules: Array<{ match: 'exact' | 'prefix'; value: string; access: 'r' | 'rw' }>): Promise<string> {
    return createUser(this.apiUrl, this.adminKey, name, rules);
  }

  /**
   * The checks after a case: /healthz answers within 100 ms (the median of three probes: one
   * sample on a shared 2-core machine measures the scheduler as much as the api), the ingest
   * process is the one started before the case, and a 1k-point upload by the canary user is
   * downloadable within 5 s. A dead api or ingest is started again, so the next case is
   * judged on its own.
   */
  async checkAfter(ingestBefore: AppProcess): Promise<Checks> {
    const failures: string[] = [];
    const healthzMs = await this.healthzMedianMs(this.apiUrl).catch((e: unknown) => {
      failures.push(`/healthz did not answer: ${String(e)}`);
      return Number.POSITIVE_INFINITY;
    });
    if (healthzMs > AFTER_EACH.healthzMs) failures.push(`/healthz took ${healthzMs.toFixed(0)} ms (limit ${AFTER_EACH.healthzMs})`);
    const ingestSamePid = this.ingest === ingestBefore && alive(ingestBefore);
    const ingestPid = ingestBefore.child.pid ?? -1;
    if (!ingestSamePid)
      failures.push(
        `the ingest process ${ingestPid} died (exit ${ingestBefore.child.exitCode ?? ingestBefore.child.signalCode}): ${lastLines(ingestBefore.output())}`,
      );
    if (!alive(this.api)) failures.push(`the api process died: ${lastLines(this.api.output())}`);
    await this.restartDead();
    const canaryMs = await withTimeout(this.canary(), 20_000, 'the canary').catch((e: unknown) => {
      failures.push(`canary: ${(e as Error).message}`);
      return null;
    });
    return { healthzMs, ingestPid, ingestSamePid, canaryMs, failures };
  }

  /** Median time of three GET /healthz, in ms; throws unless each answers 200. */
  async healthzMedianMs(url: string): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      times.push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
    }
    return times.sort((a, b) => a - b)[1]!;
  }

  /** Uploads 1k points as the canary user; the time until a download returns all of them, or throws after 5 s. */
  private async canary(): Promise<number> {
    const metric = `canary.${++this.canaries}`;
    const t0 = performance.now();
    const res = await uploadFile(this.apiUrl, this.canaryKey, csvPoints(AFTER_EACH.canaryPoints), { metric_name: metric });
    if (res.status !== 202) throw new Error(`the upload was answered ${res.status} ${res.text.slice(0, 200)}`);
    const rows = () =>
      withTimeout(
        call(`${this.apiUrl}/api/v1/metrics/download?${new URLSearchParams({ metrics: metric, max_rows: '10000' })}`, this.canaryKey),
        2000,
        'a canary download',
      ).then((r) => (r.status === 200 ? r.text.trim().split('\n').length - 1 : 0));
    await waitFor(
      `${AFTER_EACH.canaryPoints} canary points to be downloadable`,
      async () => ((await rows()) === AFTER_EACH.canaryPoints ? true : undefined),
      AFTER_EACH.canaryMs,
      100,
    );
    return performance.now() - t0;
  }

  /** Starts again an api or ingest process that died (after a case, or a crash the fuzz tier found). */
  async restartDead(): Promise<void> {
    if (!alive(this.api)) {
      this.api = this.spawn('api', { MERIDIAN_API_PORT: new URL(this.apiUrl).port });
      await waitForReady(this.apiUrl, this.api);
    }
    if (!alive(this.ingest)) this.ingest = this.spawn('ingest');
  }

  private spawn(app: 'api' | 'ingest', env: Record<string, string> = {}): AppProcess {
    const process = startApp(app, this.settings, { ...this.env, ...env });
    this.started.push(process);
    return process;
  }

  async stop(): Promise<void> {
    await Promise.all(this.started.map((p) => p.stop('SIGKILL')));
  }
}

function alive(p: AppProcess): boolean {
  return p.child.exitCode === null && p.child.signalCode === null;
}

function lastLines(output: string): string {
  return output.trim().split('\n').slice(-3).join(' | ').slice(0, 600);
}

async function waitForReady(url: string, process: AppProcess): Promise<void> {
  await waitFor(
    `the api at ${url} to be ready`,
    async () => {
      if (!alive(process)) throw new Error(`the api exited: ${lastLines(process.output())}`);
      const res = await fetch(`${url}/readyz`).catch(() => null);
      return res?.status === 200 ? true : undefined;
    },
    60_000,
    200,
  );
}
