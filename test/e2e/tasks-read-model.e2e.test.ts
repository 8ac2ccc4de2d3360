import { adapterOptions } from '@meridian/config';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickhouseTaskReadModel } from '@meridian/clickhouse';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { meridian } from '../support/cli.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask, type TaskBody } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Tasks are served from the ClickHouse read model; api and ingest hold only what is
 * unfinished and start from the read model plus the tasks log's tail.
 */
const settings = isolatedSettings({ MERIDIAN_TASK_RELEASE_INTERVAL_MS: '100' });
const readModel = clickhouseTaskReadModel(adapterOptions(settings, 'test').clickhouse);
let api: RunningApi;
let other: RunningApi | null = null;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let writer: string;

const upload = (url: string, metric: string, values: unknown[], key = writer, headers: Record<string, string> = {}) =>
  call(`${url}/api/v1/metrics/upload`, key, { method: 'POST', body: { metric_name: metric, values }, headers });

/** A file with a bad row: its task is run by the ingest worker, and fails (a push with one is refused at once). */
const uploadBadFile = (url: string, metric: string) =>
  fetch(`${url}/api/v1/metrics_file_upload?metric_name=${metric}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${writer}` },
    body: 'not a time,1\n',
  }).then(async (res) => ({ status: res.status, json: (await res.json()) as { task_id: string } }));

/** Events in the tasks topic now: the history a start from offset 0 would read. */
async function tasksHistory(): Promise<number> {
  const ends = await api.platform.admin.fetchTopicOffsets(api.platform.topics.tasks);
  return ends.reduce((n, e) => n + Number(e.high) - Number(e.low), 0);
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'trm', [{ match: 'prefix', value: 'trm.', access: 'rw' }]);
});
afterAll(async () => {
  await other?.close();
  await ingest?.close();
  await api?.close();
});

describe('tasks from the read model', () => {
  const finished: TaskBody[] = [];

  it('finished tasks leave memory once the read model has them, and are served from it unchanged', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res =
        i % 4 === 3 ? await uploadBadFile(api.url, `trm.m${i}`) : await upload(api.url, `trm.m${i}`, [{ timestamp: '2024-01-01T00:00:00Z', value: i }]);
      expect(res.status).toBe(202);
      ids.push(res.json.task_id as string);
    }
    for (const id of ids) finished.push(await waitForTask(api.url, writer, id));
    expect(finished.filter((t) => t.status === 'failed')).toHaveLength(5);
    // Once the read model covers them, they leave the api's memory; the answers stay the same.
    await waitFor('finished tasks to leave memory', () => (ids.every((id) => !api.api.tasks.state.has(id)) ? true : undefined), 30_000, 100);
    for (const t of finished) {
      expect(await readModel.get(t.task_id)).toBeDefined();
      expect((await call(`${api.url}/api/v1/tasks/${t.task_id}`, writer)).json).toEqual(t);
    }
  });

  it('lists newest first across memory and the read model, in pages with a cursor, filtered by status and kind', async () => {
    const fresh = await upload(api.url, 'trm.fresh', []);
    const all: TaskBody[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await call(`${api.url}/api/v1/tasks?limit=6${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, writer);
      expect(res.status).toBe(200);
      all.push(...(res.json.tasks as TaskBody[]));
      cursor = res.headers.get('x-next-cursor');
      pages++;
    } while (cursor !== null && pages < 10);
    expect(all[0]!.task_id).toBe(fresh.json.task_id);
    expect(all.map((t) => t.task_id)).toEqual([fresh.json.task_id, ...finished.map((t) => t.task_id).reverse()]);
    expect(pages).toBe(4);
    const failed = await call(`${api.url}/api/v1/tasks?status=failed&kind=metrics_upload`, writer);
    expect((failed.json.tasks as TaskBody[]).map((t) => t.task_id)).toEqual(
      finished
        .filter((t) => t.status === 'failed')
        .map((t) => t.task_id)
        .reverse(),
    );
    expect((await call(`${api.url}/api/v1/tasks?kind=file_definition`, writer)).json).toEqual({ tasks: [] });
    expect((await call(`${api.url}/api/v1/tasks?cursor=forged`, writer)).status).toBe(400);
    await waitForTask(api.url, writer, fresh.json.task_id as string);
  });

  it('two api instances answer a task right after its 202, whichever accepted it', async () => {
    other = await startApi(settings);
    for (let i = 0; i < 5; i++) {
      const [accepting, asking] = i % 2 === 0 ? [api, other] : [other, api];
      const res = await upload(accepting.url, `trm.two${i}`, [{ timestamp: '2024-01-01T00:00:00Z', value: i }]);
      expect(res.status).toBe(202);
      const seen = await call(`${asking.url}/api/v1/tasks/${res.json.task_id}`, writer);
      expect(seen.status).toBe(200);
      expect(['queued', 'running', 'succeeded']).toContain(seen.json.status);
    }
    // A retry under the same Idempotency-Key, on the other instance, after the task finished and left memory.
    const first = await upload(api.url, 'trm.idem', [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }], writer, { 'Idempotency-Key': 'trm-1' });
    const done = await waitForTask(api.url, writer, first.json.task_id as string);
    await waitFor(
      'the task to leave both memories',
      () => (![api, other!].some((a) => a.api.tasks.state.has(first.json.task_id as string)) ? true : undefined),
      30_000,
      100,
    );
    const retry = await upload(other.url, 'trm.idem', [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }], writer, { 'Idempotency-Key': 'trm-1' });
    expect(retry.status).toBe(202);
    expect(retry.json.task_id).toBe(first.json.task_id);
    expect((await call(`${other.url}/api/v1/tasks/${first.json.task_id}`, writer)).json).toEqual(done);
    await other.close();
    other = null;
  });

  it("tasks survive a restart of api and ingest, and a new api reads only the log's tail", async () => {
    const before = await Promise.all(finished.map(async (t) => (await call(`${api.url}/api/v1/tasks/${t.task_id}`, writer)).json as TaskBody));
    const history = await tasksHistory();
    await ingest.close();
    await api.close();
    ingest = await startWorker(settings);
    api = await startApi(settings);
    const after = await Promise.all(finished.map(async (t) => (await call(`${api.url}/api/v1/tasks/${t.task_id}`, writer)).json as TaskBody));
    expect(after).toEqual(before);
    // Everything was projected before the restart: the tail is what the read model's positions
    // left out (none, or a few events), against a history of every task's events.
    expect(history).toBeGreaterThan(50);
    expect(api.api.tasks.eventsReadAtStart).toBeLessThan(history / 10);
    // /metrics shows the same count as the accounts and files folds' starts.
    expect(await (await fetch(`${api.url}/metrics`)).text()).toContain(`meridian_fold_start_events_read{fold="tasks"} ${api.api.tasks.eventsReadAtStart}`);
    // The restarted pair runs new uploads as before.
    const res = await upload(api.url, 'trm.after', [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }]);
    expect((await waitForTask(api.url, writer, res.json.task_id as string)).status).toBe('succeeded');
  });

  it('replay rebuild tasks rebuilds the read model from the log beside the live one, identical; verification finds a difference, and a swap replaces it', async () => {
    const sql = async (query: string) => {
      const res = await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}`, { method: 'POST', body: query });
      if (!res.ok) throw new Error(await res.text());
      return res.text();
    };
    // The live read model first covers the log as it is (the rebuild reads to the end too).
    const ends = await api.platform.admin.fetchTopicOffsets(api.platform.topics.tasks);
    await waitFor(
      'the live read model to cover the log',
      async () => {
        const at = await readModel.positions();
        return ends.every((e) => Number(e.high) === 0 || (at.get(e.partition) ?? -1) >= Number(e.high) - 1) ? true : undefined;
      },
      30_000,
      100,
    );
    const run = await meridian(settings, ['replay', 'rebuild', 'tasks', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { rows: number; verification: { compared: number; differing: number; verified: boolean } };
    expect(result.verification).toMatchObject({ differing: 0, verified: true });
    expect(result.verification.compared).toBeGreaterThanOrEqual(finished.length);
    // The rebuilt rows are the live ones (each task once, the same state).
    const rows = (table: string) => sql(`SELECT task_id, state FROM ${table} FINAL ORDER BY task_id FORMAT TabSeparated`);
    expect(await rows('tasks_rebuilt')).toBe(await rows('tasks'));
    // A live row altered in place (same version, other state) is found.
    const id = finished[0]!.task_id;
    await sql(
      `INSERT INTO tasks SELECT task_id, user_name, kind, status, created_at, updated_at, replaceOne(state, '"status"', '"tampered":1,"status"'), kafka_partition, kafka_offset FROM tasks FINAL WHERE task_id = '${id}'`,
    );
    const again = JSON.parse((await meridian(settings, ['replay', 'rebuild', 'tasks', '--json'])).stdout) as typeof result;
    expect(again.verification).toMatchObject({ differing: 1, verified: false });
    // Asked to swap only if verified: refused, the command fails. Swapped regardless: the damage is gone.
    expect((await meridian(settings, ['replay', 'rebuild', 'tasks', '--swap-if-verified'])).code).not.toBe(0);
    const swapped = await meridian(settings, ['replay', 'rebuild', 'tasks', '--swap', '--json']);
    expect(swapped.code, swapped.stderr).toBe(0);
    expect(JSON.parse(swapped.stdout)).toMatchObject({ swapped: { retired: { tasks: 'tasks_retired' } } });
    expect(await rows('tasks')).not.toContain('tampered');
    expect((await call(`${api.url}/api/v1/tasks/${id}`, writer)).json).toMatchObject({ task_id: id, status: finished[0]!.status });
  });
});
