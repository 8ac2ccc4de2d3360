import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Settings } from '@meridian/config';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

// A backlog of two tasks per user; no ingest worker runs at first, so what is accepted stays unfinished.
// The backlog holds uploads staged for the ingest worker: small JSON bodies are staged here too
// (pushes wait in no backlog; the projector's lag bounds them: push.e2e.test.ts).
const base = { MERIDIAN_UPLOAD_BACKLOG_PER_USER: '2', MERIDIAN_RATE_LIMIT_PER_SECOND: '0', MERIDIAN_PUSH_MAX_BYTES: '0' };
const grants = [{ match: 'prefix' as const, value: 'bl.', access: 'rw' as const }];

const pointOf = (metric: string) => ({ metric_name: metric, values: [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }] });
const upload = (url: string, key: string, metric: string, headers: Record<string, string> = {}) =>
  call(`${url}/api/v1/metrics/upload`, key, { method: 'POST', body: pointOf(metric), headers });

/** A new user of `api` whose backlog (two tasks, no worker running) is full: their key. */
async function userWithFullBacklog(api: RunningApi, settings: Settings, name: string): Promise<string> {
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  const key = await createUser(api.url, root, name, grants);
  expect((await upload(api.url, key, 'bl.a')).status).toBe(202);
  expect((await upload(api.url, key, 'bl.b')).status).toBe(202);
  return key;
}

describe('the backlog of each user, bounded at the api (MERIDIAN_UPLOAD_BACKLOG_PER_USER)', () => {
  const settings = isolatedSettings({ ...base, MERIDIAN_UPLOAD_BACKLOG_WAIT_MS: '120000' });
  let api: RunningApi;
  let ann: string;
  let bob: string;
  let worker: Awaited<ReturnType<typeof startWorker>> | undefined;

  beforeAll(async () => {
    api = await startApi(settings);
    const root = await bootstrapAdmin(settings);
    await api.api.accounts.syncToEnd();
    ann = await createUser(api.url, root, 'bl-ann', grants);
    bob = await createUser(api.url, root, 'bl-bob', grants);
  });
  afterAll(async () => {
    await worker?.close();
    await api?.close();
  });

  it("holds a user's next upload past their backlog until one of their tasks ends, while a retry and other users go through at once", async () => {
    const first = await upload(api.url, ann, 'bl.a', { 'Idempotency-Key': 'a' });
    expect(first.status).toBe(202);
    // The 202 comes once this api's fold holds the task: ann's backlog is full after the second.
    expect((await upload(api.url, ann, 'bl.b')).status).toBe(202);
    // Full: ann's third waits (no worker runs, nothing ends) ...
    let answered = false;
    const third = upload(api.url, ann, 'bl.c').then((res) => {
      answered = true;
      return res;
    });
    // ... while a retry of her first task is answered at once (it adds nothing to the backlog),
    expect((await upload(api.url, ann, 'bl.a', { 'Idempotency-Key': 'a' })).json.task_id).toBe(first.json.task_id);
    // and another user's uploads do not queue behind hers.
    expect((await upload(api.url, bob, 'bl.d')).status).toBe(202);
    expect((await upload(api.url, bob, 'bl.e')).status).toBe(202);
    expect(answered).toBe(false);
    worker = await startWorker(settings);
    const accepted = await third;
    expect(accepted.status).toBe(202);
    expect((await waitForTask(api.url, ann, accepted.json.task_id as string)).status).toBe('succeeded');
  });
});

describe('an upload held at its backlog whose client goes away', () => {
  it("gives its in-flight slot back at once, so the user's next upload waits for room instead of being refused", async () => {
    const settings = isolatedSettings({ ...base, MERIDIAN_UPLOAD_BACKLOG_WAIT_MS: '120000', MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: '1' });
    const api = await startApi(settings);
    let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
    try {
      const key = await userWithFullBacklog(api, settings, 'bl-gone');
      // The third waits, holding the user's one slot; then its client goes away.
      const leaving = new AbortController();
      const left = fetch(`${api.url}/api/v1/metrics/upload`, {
        method: 'POST',
        signal: leaving.signal,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(pointOf('bl.c')),
      }).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 300));
      leaving.abort();
      await left;
      // Had the slot stayed with the gone request, this one would be refused at once (429, in flight).
      let answered = false;
      const next = upload(api.url, key, 'bl.d').then((res) => {
        answered = true;
        return res;
      });
      await new Promise((r) => setTimeout(r, 500));
      expect(answered).toBe(false);
      worker = await startWorker(settings);
      const accepted = await next;
      expect(accepted.status).toBe(202);
      expect((await waitForTask(api.url, key, accepted.json.task_id as string)).status).toBe('succeeded');
    } finally {
      await worker?.close();
      await api.close();
    }
  });
});

describe('an upload held past MERIDIAN_UPLOAD_BACKLOG_WAIT_MS', () => {
  it('gets 429 problem+json naming the setting, with Retry-After, and its body is never read', async () => {
    const settings = isolatedSettings({ ...base, MERIDIAN_UPLOAD_BACKLOG_WAIT_MS: '200' });
    const api = await startApi(settings);
    try {
      const key = await userWithFullBacklog(api, settings, 'bl-short');
      const refused = await upload(api.url, key, 'bl.c');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(refused.json.type).toBe('/problems/too-many');
      expect(refused.json.detail).toContain('MERIDIAN_UPLOAD_BACKLOG_PER_USER');
      expect(refused.headers.get('retry-after')).toBe('1');
      // Nothing of the refused upload was accepted: the user still has exactly the two tasks.
      const listed = await call(`${api.url}/api/v1/tasks`, key);
      expect((listed.json.tasks as unknown[]).length).toBe(2);
    } finally {
      await api.close();
    }
  });
});
