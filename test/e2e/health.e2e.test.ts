import { afterAll, describe, expect, it } from 'vitest';
import { buildApi } from '@meridian/api';
import { createLogger } from '@meridian/observability';
import { createPlatform } from '../support/platform.ts';
import { serve } from '../support/http.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

const logger = createLogger({ name: 'test', level: 'silent' });

describe('health and readiness', () => {
  const started: AppProcess[] = [];
  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
  });

  it('api and ingest start as real processes; /readyz reports all three dependencies up; ingest joins its group', async () => {
    const settings = isolatedSettings({ MERIDIAN_API_PORT: '18391' });
    const api = startApp('api', settings);
    const ingest = startApp('ingest', settings);
    started.push(api, ingest);
    const body = await waitFor(
      'the api to be ready',
      async () => {
        const res = await fetch('http://127.0.0.1:18391/readyz');
        return res.status === 200 ? res.json() : undefined;
      },
      60_000,
      250,
    );
    expect(body).toEqual({
      status: 'ready',
      checks: { kafka: { status: 'up' }, clickhouse: { status: 'up' }, minio: { status: 'up' }, accounts: { status: 'up' }, tasks: { status: 'up' } },
    });
    await waitFor('ingest to join its consumer group', () => (ingest.output().includes('joined consumer group') ? true : undefined), 60_000);
    // Logs are JSON lines with a request id.
    const line = await waitFor('the request log line', () =>
      api
        .output()
        .split('\n')
        .find((l) => l.includes('"path":"/readyz"') && l.includes('"status":200')),
    );
    expect(JSON.parse(line)).toMatchObject({ level: 'info', status: 200, request_id: expect.any(String) });
  });

  it('a dead dependency turns /readyz to 503 naming it, while /healthz keeps answering', async () => {
    const settings = isolatedSettings({ CLICKHOUSE_URL: 'http://127.0.0.1:1', MERIDIAN_READY_TIMEOUT_MS: '1500' });
    const platform = createPlatform(settings, logger, 'api');
    const api = await buildApi(platform);
    const served = await serve(api.app);
    try {
      const ready = await fetch(`${served.url}/readyz`);
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { status: string; checks: Record<string, { status: string }> };
      expect(body.status).toBe('unavailable');
      expect(body.checks.clickhouse?.status).toBe('down');
      expect(body.checks.kafka).toEqual({ status: 'up' });
      expect(body.checks.minio).toEqual({ status: 'up' });
      expect(body.checks.accounts?.status).toBe('down'); // never started: not serving yet
      const health = await fetch(`${served.url}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      await served.close();
      await api.stop();
      await platform.close();
    }
  });

  it('the api process starts while a dependency is down: /healthz answers, /readyz names it, and it keeps trying', async () => {
    const settings = isolatedSettings({ CLICKHOUSE_URL: 'http://127.0.0.1:1', MERIDIAN_READY_TIMEOUT_MS: '1500', MERIDIAN_API_PORT: '18393' });
    const api = startApp('api', settings);
    started.push(api);
    await waitFor('/healthz', async () => ((await fetch('http://127.0.0.1:18393/healthz').catch(() => null))?.status === 200 ? true : undefined), 60_000, 250);
    const ready = await fetch('http://127.0.0.1:18393/readyz');
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, { status: string }> }).checks.clickhouse?.status).toBe('down');
    await waitFor(
      'a second attempt at preparing',
      () => ((api.output().match(/preparing topics, tables and bucket failed; retrying/g) ?? []).length >= 2 ? true : undefined),
      30_000,
    );
    expect(api.child.exitCode).toBeNull();
  });

  it('the ingest process waits out a dependency that is down at start, and keeps trying', async () => {
    const ingest = startApp('ingest', isolatedSettings({ CLICKHOUSE_URL: 'http://127.0.0.1:1' }));
    started.push(ingest);
    await waitFor(
      'a second attempt at preparing',
      () => ((ingest.output().match(/preparing topics, tables and bucket failed; retrying/g) ?? []).length >= 2 ? true : undefined),
      30_000,
    );
    expect(ingest.child.exitCode).toBeNull();
    expect(ingest.output()).not.toMatch(/failed to start/);
  });

  it('the api refuses to start with an invalid setting and names it', async () => {
    const settings = isolatedSettings();
    const api = startApp('api', settings, { MERIDIAN_API_PORT: 'not-a-port' });
    const code = await new Promise<number | null>((resolve) => api.child.once('exit', resolve));
    expect(code).toBe(2);
    expect(api.output()).toMatch(/MERIDIAN_API_PORT="not-a-port"/);
  });
});
