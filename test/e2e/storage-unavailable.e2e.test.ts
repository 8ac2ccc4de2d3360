import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi, httpServerOptions, type Api } from '@meridian/api';
import type { Settings } from '@meridian/config';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { serve, type Served } from '../support/http.ts';
import { freePort } from '../support/ports.ts';
import { isolatedSettings } from '../support/settings.ts';
import { csvPoints, send, uploadFile } from '../support/uploads.ts';

/**
 * Storage down while a body is being staged: each staging route answers 503 problem+json
 * (retriable, with Retry-After), never 500. A second api on the same logs whose S3 endpoint
 * is a closed loopback port stands in for MinIO being down, for these requests only: the
 * shared MinIO is not touched.
 */
let settings: Settings;
let healthy: RunningApi;
let platform: Platform;
let api: Api;
let served: Served;
let key: string;

beforeAll(async () => {
  // JSON bodies past 4 KiB are staged: the small one below is a push, which needs no storage.
  settings = isolatedSettings({ MERIDIAN_PUSH_MAX_BYTES: '4096' });
  healthy = await startApi(settings); // prepares topics, tables and bucket
  key = await createUser(healthy.url, await bootstrapAdmin(settings), 'ada', [{ match: 'prefix', value: 'st.', access: 'rw' }]);
  const noStorage = { ...settings, S3_ENDPOINT: `http://127.0.0.1:${await freePort()}` };
  platform = createPlatform(noStorage, createLogger({ name: 'api', level: 'silent' }), 'api');
  api = await buildApi(platform);
  await api.start(); // follows the logs (Kafka only): ada is known
  served = await serve(api.app, httpServerOptions(noStorage));
}, 120_000);

afterAll(async () => {
  await served?.close();
  await api?.stop();
  await platform?.close();
  await healthy?.close();
});

function expectUnavailable(
  answer: { status: number; headers: Record<string, string | string[] | undefined>; json: { type?: string; detail?: string } },
  what: string,
) {
  expect(answer.status).toBe(503);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(answer.headers['retry-after']).toBe('1');
  expect(answer.json.type).toBe('/problems/unavailable');
  expect(answer.json.detail).toBe(`storage is not reachable; ${what} was not accepted, retry later`);
}

function multipart(fields: Record<string, string>, file: string, boundary = 'xMeridianBoundary'): { body: Buffer; contentType: string } {
  const parts = Object.entries(fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  parts.push(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="points.csv"\r\nContent-Type: text/csv\r\n\r\n${file}\r\n--${boundary}--\r\n`,
  );
  return { body: Buffer.from(parts.join('')), contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('storage unreachable while a body is staged', () => {
  it('a file upload (raw body) answers 503, not 500', async () => {
    expectUnavailable(await uploadFile(served.url, key, csvPoints(100), { metric_name: 'st.raw' }), 'the upload');
  });

  it('a file upload (multipart) answers 503', async () => {
    const form = multipart({}, csvPoints(100));
    expectUnavailable(
      await send(`${served.url}/api/v1/metrics_file_upload?metric_name=st.form`, {
        method: 'POST',
        key,
        body: form.body,
        headers: { 'Content-Type': form.contentType },
      }),
      'the upload',
    );
  });

  it('a JSON upload to be staged answers 503; a push, which needs no storage, is accepted', async () => {
    const values = (n: number) => Array.from({ length: n }, (_, i) => ({ timestamp: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(), value: i }));
    const staged = JSON.stringify({ metric_name: 'st.json', values: values(200) });
    expect(staged.length).toBeGreaterThan(4096);
    expectUnavailable(
      await send(`${served.url}/api/v1/metrics/upload`, { method: 'POST', key, body: staged, headers: { 'Content-Type': 'application/json' } }),
      'the upload',
    );
    const pushed = await send(`${served.url}/api/v1/metrics/upload`, {
      method: 'POST',
      key,
      body: JSON.stringify({ metric_name: 'st.push', values: values(1) }),
      headers: { 'Content-Type': 'application/json' },
    });
    expect(pushed.status).toBe(202);
  });

  it('a file definition answers 503', async () => {
    const form = multipart({ file_description: 'points' }, csvPoints(100));
    expectUnavailable(
      await send(`${served.url}/api/v1/files`, { method: 'POST', key, body: form.body, headers: { 'Content-Type': form.contentType } }),
      'the file',
    );
  });

  it("the same upload to an api whose storage answers is accepted (the 503s were storage's)", async () => {
    expect((await uploadFile(healthy.url, key, csvPoints(100), { metric_name: 'st.raw' })).status).toBe(202);
  });
});
