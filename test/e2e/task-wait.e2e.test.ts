import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * GET /api/v1/tasks/{id}?wait=N (long-poll). Tasks are held in `queued` by uploading while no
 * ingest worker runs: every wait here is on a task that cannot end until the test starts one,
 * so no outcome depends on how fast the machine is.
 */
const settings = isolatedSettings({ MERIDIAN_TASK_MAX_WAIT_SECONDS: '600', MERIDIAN_MAX_TASK_WAITERS_PER_USER: '2', MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>> | undefined;
let writer: string;
let other: string;
let root: string;
let queued: string; // a task of writer's, queued until the worker starts

const taskUrl = (id: string, wait?: number) => `${api.url}/api/v1/tasks/${id}${wait === undefined ? '' : `?wait=${wait}`}`;

async function upload(): Promise<string> {
  const res = await call(`${api.url}/api/v1/metrics/upload`, writer, {
    method: 'POST',
    body: { metric_name: 'wait.a', values: [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }] },
  });
  expect(res.status).toBe(202);
  return res.json.task_id as string;
}

beforeAll(async () => {
  api = await startApi(settings);
  root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'wait.', access: 'rw' }]);
  other = await createUser(api.url, root, 'other', [{ match: 'prefix', value: 'wait.', access: 'rw' }]);
  queued = await upload();
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('waiting for a task to end', () => {
  it('when the wait runs out first: 200 with the task as it is, after the wait', async () => {
    const started = performance.now();
    const res = await call(taskUrl(queued, 1), writer);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ task_id: queued, status: 'running' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    expect(api.api.tasks.ends.size).toBe(0);
  });

  it("someone else's task and an unknown one answer 404 without waiting, as without wait", async () => {
    for (const url of [taskUrl(queued, 600), taskUrl('00000000-0000-4000-8000-000000000000', 600)]) {
      const res = await call(url, other);
      expect(res.status).toBe(404);
      expect(res.json).toMatchObject({ type: '/problems/not-found', detail: 'no such task' });
    }
    expect(api.api.tasks.ends.size).toBe(0);
  });

  it('past MERIDIAN_MAX_TASK_WAITERS_PER_USER: 429 problem+json; a client that goes away frees its wait at once', async () => {
    const gone = new AbortController();
    const held = [0, 1].map(() => fetch(taskUrl(queued, 600), { headers: { Authorization: `Bearer ${writer}` }, signal: gone.signal }).catch(() => 'aborted'));
    await waitFor('two waits held', () => (api.api.tasks.ends.size === 2 ? true : undefined));
    const third = await call(taskUrl(queued, 600), writer);
    expect(third.status).toBe(429);
    expect(third.headers.get('content-type')).toMatch(/problem\+json/);
    expect(third.json).toMatchObject({ type: '/problems/too-many', detail: expect.stringContaining('MERIDIAN_MAX_TASK_WAITERS_PER_USER') });
    // Another user's waits are theirs: the cap is per user.
    expect((await call(taskUrl(queued, 1), root)).status).toBe(200);
    gone.abort();
    expect(await Promise.all(held)).toEqual(['aborted', 'aborted']);
    await waitFor('the waits to be given back', () => (api.api.tasks.ends.size === 0 ? true : undefined));
    const after = await call(taskUrl(queued, 1), writer);
    expect(after.status).toBe(200);
  });

  it('answers as soon as the task ends: no later than 100 ms after a parallel poll first sees it', async () => {
    const polled = { endedAt: undefined as number | undefined };
    const stopPolling = new AbortController();
    const longPoll = call(taskUrl(queued, 600), writer).then((res) => ({ res, at: performance.now(), wall: Date.now() }));
    await waitFor('the long-poll to wait', () => (api.api.tasks.ends.size === 1 ? true : undefined));
    // The fast poll (every 10 ms, as an admin: its own rate and slots) records when the end is first visible.
    const poller = (async () => {
      while (!stopPolling.signal.aborted) {
        const res = await call(taskUrl(queued), root);
        if (res.json.status === 'succeeded' || res.json.status === 'failed') {
          polled.endedAt ??= performance.now();
          return;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    ingest = await startWorker(settings);
    const { res, at, wall } = await longPoll;
    await poller;
    stopPolling.abort();
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ task_id: queued, status: 'succeeded' });
    const gap = at - polled.endedAt!;
    console.log(
      `long-poll answered ${gap.toFixed(1)} ms after a fast poll first saw the end (negative: before it), ${wall - Date.parse(res.json.updated_at as string)} ms after the task's updated_at`,
    );
    expect(gap).toBeLessThanOrEqual(100);
    expect(api.api.tasks.ends.size).toBe(0);
  });

  it('a task that has ended answers at once, whatever the wait', async () => {
    const started = performance.now();
    const res = await call(taskUrl(queued, 600), writer);
    expect(res.json.status).toBe('succeeded');
    expect(performance.now() - started).toBeLessThan(30_000); // not the 600 s asked for
  });
});

describe("the server's own bounds around a wait", () => {
  // A second api on the same logs, with a request timeout and an idle timeout shorter than the waits.
  let tight: RunningApi;
  beforeAll(async () => {
    tight = await startApi({ ...settings, MERIDIAN_TASK_MAX_WAIT_SECONDS: 3, MERIDIAN_REQUEST_TIMEOUT_MS: 1000, MERIDIAN_HTTP_IDLE_TIMEOUT_MS: 1000 });
  });
  afterAll(async () => {
    await tight?.close();
  });

  it('a wait longer than the request and idle timeouts is not cut by them, and one longer than the cap is shortened to it', async () => {
    await ingest?.close(); // tasks stay queued again
    ingest = undefined;
    const id = await upload();
    await waitFor('the task on the second api', () => (tight.api.tasks.state.has(id) ? true : undefined));
    const started = performance.now();
    const res = await call(`${tight.url}/api/v1/tasks/${id}?wait=3600`, writer);
    const took = performance.now() - started;
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ task_id: id, status: 'running' });
    expect(took).toBeGreaterThanOrEqual(2990); // the cap's 3 s, past both 1 s timeouts
    expect(took).toBeLessThan(600_000); // not the hour asked for
  });
});
