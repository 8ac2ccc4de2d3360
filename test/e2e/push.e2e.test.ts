import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { clickhouse, pointsOfMetric } from '../support/clickhouse.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { taskMessages, waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The push path: a JSON upload of at most MERIDIAN_PUSH_MAX_BYTES is decided in the api and
 * written with its outcome in one transaction; the ingest worker never runs it, only its
 * projector stores it. Larger bodies keep the staged path.
 */
const PUSH_MAX_BYTES = 4096;
const codec = createEventCodec<TaskEvent>();
const T0 = Date.UTC(2024, 0, 1);
const values = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ timestamp: formatTimestamp(T0 + (from + i) * 1000), value: from + i + 0.5 }));

async function eventTypes(api: RunningApi, prefix: string, taskId: string, atLeast: number): Promise<string[]> {
  return (await taskMessages(api, prefix, taskId, atLeast)).map((m) => codec.decode(m).type);
}

/** The stored values of every metric starting with `prefix`, per metric in time order (the prefix is the test's own, never user text). */
async function storedValues(settings: ReturnType<typeof isolatedSettings>, prefix: string): Promise<Map<string, number[]>> {
  const text = await clickhouse(
    settings,
    `SELECT metric_name, groupArray(value) FROM (SELECT metric_name, value FROM points WHERE startsWith(metric_name, '${prefix}') ORDER BY metric_name, ts) GROUP BY metric_name FORMAT TabSeparated`,
  );
  return new Map(
    text
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('\t'))
      .map(([name, list]) => [name!, JSON.parse(list!) as number[]]),
  );
}

async function staged(api: RunningApi, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const o of api.platform.storage.client.listObjectsV2(api.platform.storage.bucket, prefix, true)) found.push((o as { name: string }).name);
  return found;
}

describe('pushes, with the ingest worker running', () => {
  const settings = isolatedSettings({
    MERIDIAN_PUSH_MAX_BYTES: String(PUSH_MAX_BYTES),
    MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
    MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: '64',
  });
  let api: RunningApi;
  let ingest: Awaited<ReturnType<typeof startWorker>>;
  let writer: string;
  const push = (metric: string, body: unknown, query = '', headers: Record<string, string> = {}) =>
    call(`${api.url}/api/v1/metrics/upload${query}`, writer, { method: 'POST', body: { metric_name: metric, values: body }, headers });

  beforeAll(async () => {
    api = await startApi(settings);
    ingest = await startWorker(settings);
    const root = await bootstrapAdmin(settings);
    await api.api.accounts.syncToEnd();
    writer = await createUser(api.url, root, 'pusher', [{ match: 'prefix', value: 'push.', access: 'rw' }]);
  });
  afterAll(async () => {
    await ingest?.close();
    await api?.close();
  });

  it('is decided in the api: its task is known at its 202, no worker runs it, nothing is staged, and its points are stored once', async () => {
    const res = await push('push.one', values(20));
    expect(res.status).toBe(202);
    const taskId = res.json.task_id as string;
    // Known at once on the api that accepted it: decided, waiting only for the projector.
    expect(['running', 'succeeded']).toContain((await call(`${api.url}/api/v1/tasks/${taskId}`, writer)).json.status);
    const task = await waitForTask(api.url, writer, taskId);
    expect(task).toMatchObject({
      status: 'succeeded',
      result: { points_accepted: 20, rows_rejected: 0, metrics: ['push.one'] },
      progress: { rows_done: 20, rows_total: 20 },
    });
    // The command and its outcome in one event, then the projector's announcement: no start, no parse by a worker.
    expect(await eventTypes(api, settings.MERIDIAN_TOPIC_PREFIX, taskId, 2)).toEqual(['MetricsPushed', 'UploadSegmentProjected']);
    expect(await staged(api, `staging/uploads/${taskId}/`)).toEqual([]);
    expect((await storedValues(settings, 'push.one')).get('push.one')).toEqual(values(20).map((v) => v.value));
  });

  it('answers a push with an invalid row 400 with the rows at once, and stores nothing; on_error=skip stores the rest and reports them', async () => {
    const bad = [...values(3), { timestamp: 'yesterday', value: 1 }, { timestamp: formatTimestamp(T0), value: '12' }];
    const refused = await push('push.bad', bad);
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/problem\+json/);
    expect(refused.json).toMatchObject({ type: '/problems/validation', detail: expect.stringContaining('2 invalid rows') });
    expect(refused.json.errors).toEqual([expect.objectContaining({ row: 4, field: 'timestamp' }), expect.objectContaining({ row: 5, field: 'value' })]);
    const tasks = (await call(`${api.url}/api/v1/tasks?limit=50`, writer)).json.tasks as Array<{ result: { metrics: string[] } | null }>;
    expect(tasks.filter((t) => t.result?.metrics.includes('push.bad'))).toEqual([]);

    const skipped = await push('push.bad', bad, '?on_error=skip');
    expect(skipped.status).toBe(202);
    const task = await waitForTask(api.url, writer, skipped.json.task_id as string);
    expect(task).toMatchObject({ status: 'succeeded', result: { points_accepted: 3, rows_rejected: 2 } });
    expect(task.errors.map((e) => e.row)).toEqual([4, 5]);
    expect(await pointsOfMetric(settings, 'push.bad')).toBe(3);
  });

  it('a retry under the same Idempotency-Key answers the same task and stores nothing twice', async () => {
    const first = await push('push.idem', values(5), '', { 'Idempotency-Key': 'push-idem-1' });
    const again = await push('push.idem', values(5), '', { 'Idempotency-Key': 'push-idem-1' });
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.json.task_id).toBe(first.json.task_id);
    expect((await push('push.idem', values(6), '', { 'Idempotency-Key': 'push-idem-1' })).status).toBe(409);
    await waitForTask(api.url, writer, first.json.task_id as string);
    expect(await pointsOfMetric(settings, 'push.idem')).toBe(5);
  });

  it('pushes arriving together share transactions, each stored whole and once', async () => {
    const metricsText = async () => (await fetch(`${api.url}/metrics`)).text();
    const counter = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 'NaN');
    const before = await metricsText();
    const N = 40;
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => push(`push.many.${i}`, values(10, i * 10))));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: N }, () => 202));
    for (const a of answers) expect((await waitForTask(api.url, writer, a.json.task_id as string)).status).toBe('succeeded');
    const after = await metricsText();
    const pushes = counter(after, 'meridian_pushes_committed_total') - counter(before, 'meridian_pushes_committed_total');
    const transactions = counter(after, 'meridian_push_transactions_total') - counter(before, 'meridian_push_transactions_total');
    expect(pushes).toBe(N);
    expect(transactions).toBeLessThan(N);
    const stored = await storedValues(settings, 'push.many.');
    expect(stored.size).toBe(N);
    for (let i = 0; i < N; i++) expect(stored.get(`push.many.${i}`)).toEqual(values(10, i * 10).map((v) => v.value));
  });

  it('a body larger than MERIDIAN_PUSH_MAX_BYTES is staged and run by the worker, as before', async () => {
    const big = values(100);
    expect(JSON.stringify({ metric_name: 'push.big', values: big }).length).toBeGreaterThan(PUSH_MAX_BYTES);
    const res = await push('push.big', big);
    expect(res.status).toBe(202);
    expect((await waitForTask(api.url, writer, res.json.task_id as string)).status).toBe('succeeded');
    expect(await eventTypes(api, settings.MERIDIAN_TOPIC_PREFIX, res.json.task_id as string, 4)).toEqual(
      expect.arrayContaining(['MetricsUploadRequested', 'TaskStarted', 'UploadParsed']),
    );
    expect(await pointsOfMetric(settings, 'push.big')).toBe(100);
  });
});

describe('pushes while nothing is projected', () => {
  // The projector's lag bounds pushes, not a user's backlog: with a backlog of 1 and no worker,
  // pushes go on being accepted until the points waiting pass MERIDIAN_PUSH_MAX_LAG_POINTS.
  const LAG = 50;
  const settings = isolatedSettings({ MERIDIAN_PUSH_MAX_LAG_POINTS: String(LAG), MERIDIAN_UPLOAD_BACKLOG_PER_USER: '1', MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
  let api: RunningApi;
  let ingest: Awaited<ReturnType<typeof startWorker>> | undefined;
  let writer: string;

  beforeAll(async () => {
    api = await startApi(settings);
    const root = await bootstrapAdmin(settings);
    await api.api.accounts.syncToEnd();
    writer = await createUser(api.url, root, 'lagging', [{ match: 'prefix', value: 'lag.', access: 'rw' }]);
  });
  afterAll(async () => {
    await ingest?.close();
    await api?.close();
  });

  it("accepts pushes past the user's backlog up to the lag, then 429 with Retry-After; once projected, accepts again", async () => {
    const push = (i: number) => call(`${api.url}/api/v1/metrics/upload`, writer, { method: 'POST', body: { metric_name: `lag.${i}`, values: values(20) } });
    const accepted: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await push(i);
      expect(res.status).toBe(202); // 0, 20, then 40 points waiting: within the lag
      accepted.push(res.json.task_id as string);
    }
    expect(api.api.tasks.pointsAwaitingProjection).toBe(60);
    const refused = await push(3);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.json).toMatchObject({ type: '/problems/too-many', detail: expect.stringContaining('MERIDIAN_PUSH_MAX_LAG_POINTS') });
    expect(await fetch(`${api.url}/metrics`).then((r) => r.text())).toMatch(/^meridian_points_awaiting_projection 60$/m);

    ingest = await startWorker(settings);
    for (const id of accepted) expect((await waitForTask(api.url, writer, id)).status).toBe('succeeded');
    await waitFor('the lag to drain', () => (api.api.tasks.pointsAwaitingProjection === 0 ? true : undefined));
    expect((await push(3)).status).toBe(202);
  });
});
