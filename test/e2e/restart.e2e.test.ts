import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@meridian/observability';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call } from '../support/api.ts';
import { createPlatform, type Platform } from '../support/platform.ts';
import { freePort } from '../support/ports.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask, type TaskBody } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

// Tasks and files survive a restart of every process, and a new process reads only
// what its snapshot or read model leaves out. A file deleted while the worker is down has its
// bytes removed after the worker's restart: the blob collector finds the deletion in the files
// read model after its sweep position (it keeps no file in memory, and no snapshot).
const settings = isolatedSettings({ MERIDIAN_BLOB_SWEEP_INTERVAL_MS: '200', MERIDIAN_FILES_READ_MODEL_WAIT_MS: '2000' });
const platform: Platform = createPlatform(settings, createLogger({ name: 'restart-e2e', level: 'warn' }), 'restart-e2e');

type Running = { api: AppProcess; ingest: AppProcess; url: string; adminUrl: string };
let running: Running | null = null;
let ada: string;
let bob: string;

async function startBoth(): Promise<Running> {
  const [port, adminPort, ingestPort] = [await freePort(), await freePort(), await freePort()];
  const ingest = startApp('ingest', settings, { MERIDIAN_INGEST_HEALTH_PORT: String(ingestPort) });
  const api = startApp('api', settings, { MERIDIAN_API_PORT: String(port), MERIDIAN_ADMIN_PORT: String(adminPort) });
  const ready = (url: string) => async () => ((await fetch(url).catch(() => null))?.status === 200 ? true : undefined);
  await waitFor('the api to be ready', ready(`http://127.0.0.1:${port}/readyz`), 120_000, 100);
  await waitFor('the worker to be ready', ready(`http://127.0.0.1:${ingestPort}/readyz`), 120_000, 100);
  return { api, ingest, url: `http://127.0.0.1:${port}`, adminUrl: `http://127.0.0.1:${adminPort}` };
}

async function define(url: string, key: string, content: string, name: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([content], { type: 'text/plain' }), name);
  const res = await fetch(`${url}/api/v1/file/new`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  const accepted = (await res.json()) as { task_id: string; file_id: string };
  expect(res.status).toBe(202);
  expect((await waitForTask(url, key, accepted.task_id)).status).toBe('succeeded');
  return accepted.file_id;
}

const blobExists = async (content: string) => {
  const name = `blobs/sha256/${createHash('sha256').update(content).digest('hex')}`;
  return platform.storage.client.statObject(platform.storage.bucket, name).then(
    () => true,
    () => false,
  );
};

/** Everything a user sees: their task list, each task, their files, and each file's bytes. */
async function seenBy(url: string, key: string, taskIds: readonly string[]) {
  const tasks = (await call(`${url}/api/v1/tasks?limit=100`, key)).json as { tasks: TaskBody[] };
  const each = await Promise.all(taskIds.map(async (id) => (await call(`${url}/api/v1/tasks/${id}`, key)).json as TaskBody));
  const files = (await call(`${url}/api/v1/files`, key)).json as { files_list: Array<{ file_id: string }> };
  const bytes = await Promise.all(
    files.files_list.map(async (f) => (await fetch(`${url}/api/v1/file/download/${f.file_id}`, { headers: { Authorization: `Bearer ${key}` } })).text()),
  );
  return { tasks, each, files, bytes };
}

/** What a process logged of its folds' starts, by topic: the events it read after its snapshot or read model. */
function foldStarts(output: string): Map<string, number> {
  const starts = new Map<string, number>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{') || !line.includes('caught up')) continue;
    const entry = JSON.parse(line) as { topic?: string; events_read?: number };
    if (entry.topic !== undefined && entry.events_read !== undefined) starts.set(entry.topic, entry.events_read);
  }
  return starts;
}

beforeAll(async () => {
  await platform.prepare();
  running = await startBoth();
  const root = await bootstrapAdmin(settings);
  ada = await createUser(running.url, root, 'ada', [{ match: 'prefix', value: 'restart.', access: 'rw' }]);
  bob = await createUser(running.url, root, 'bob', []);
}, 180_000);

afterAll(async () => {
  await running?.api.stop();
  await running?.ingest.stop();
  await platform.close();
});

describe('a restart of every process', () => {
  it('keeps tasks and files as they were, reads only the tail at start, and removes a blob whose file was deleted while the worker was down', async () => {
    const { url } = running!;
    const taskIds: string[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await call(`${url}/api/v1/metrics/upload`, ada, {
        method: 'POST',
        body: { metric_name: `restart.m${i % 3}`, values: [{ timestamp: '2024-01-01T00:00:00Z', value: i }] },
      });
      expect(res.status).toBe(202);
      taskIds.push(res.json.task_id as string);
    }
    for (const id of taskIds) expect((await waitForTask(url, ada, id)).status).toBe('succeeded');
    const kept = `kept ${randomBytes(8).toString('hex')}\n`;
    const doomed = `doomed ${randomBytes(8).toString('hex')}\n`;
    const shared = await define(url, ada, kept, 'kept.txt');
    const gone = await define(url, ada, doomed, 'doomed.txt');
    expect((await call(`${url}/api/v1/files/${shared}/entitlements/bob`, ada, { method: 'PUT', body: { access: 'r' } })).status).toBe(200);

    // Everything so far is in the files read model (the delete below decides on it).
    const filesEnd = (await platform.admin.fetchTopicOffsets(platform.topics.files))[0]!;
    const covered = async () =>
      (
        await (
          await fetch(
            `${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent('SELECT max(kafka_offset) FROM files_positions')}`,
          )
        ).text()
      ).trim();
    await waitFor('the files read model to cover the log', async () => (Number(await covered()) >= Number(filesEnd.high) - 1 ? true : undefined), 60_000, 100);

    // The worker stops; the file is deleted meanwhile (the api answers once its wait for the
    // read model runs out); its bytes stay: no collector runs.
    await running!.ingest.stop();
    expect((await call(`${url}/api/v1/files/${gone}`, ada, { method: 'DELETE' })).status).toBe(204);
    expect(await blobExists(doomed)).toBe(true);
    const before = { ada: await seenBy(url, ada, taskIds), bob: await seenBy(url, bob, []) };
    await running!.api.stop();

    // Both start again, as deployed.
    running = await startBoth();
    const after = running.url;
    await waitFor(
      'the deletion to be projected',
      async () => ((await call(`${after}/api/v1/files/${gone}`, ada)).status === 404 ? true : undefined),
      60_000,
      100,
    );
    await waitFor("the deleted file's blob to leave storage", async () => (!(await blobExists(doomed)) ? true : undefined), 60_000, 200);
    expect(await blobExists(kept)).toBe(true);

    const now = { ada: await seenBy(after, ada, taskIds), bob: await seenBy(after, bob, []) };
    expect(now.ada.tasks).toEqual(before.ada.tasks);
    expect(now.ada.each).toEqual(before.ada.each);
    expect(now.bob).toEqual(before.bob);
    expect(now.bob.bytes).toEqual([kept]);
    // Ada's files are what she had, less the one deleted (the deleting api's own list still showed
    // it: its wait for the read model ran out while the worker was down).
    expect(now.ada.files.files_list.map((f) => f.file_id)).toEqual(before.ada.files.files_list.map((f) => f.file_id).filter((id) => id !== gone));
    expect(now.ada.bytes).toEqual([kept]);

    // Each start read at most what its snapshot or read model left out: the worker folds accounts
    // and tasks (files: none at all), the api accounts and tasks; the history is far longer.
    const history = (await platform.admin.fetchTopicOffsets(platform.topics.tasks)).reduce((n, p) => n + Number(p.high), 0);
    expect(history).toBeGreaterThan(90);
    const worker = foldStarts(running.ingest.output());
    expect([...worker.keys()].sort()).toEqual([platform.topics.accounts, platform.topics.tasks].sort());
    expect(worker.get(platform.topics.tasks)!).toBeLessThan(history / 10);
    const metrics = await (await fetch(`${running.adminUrl}/metrics`)).text();
    const apiTasksRead = Number(/^meridian_fold_start_events_read\{fold="tasks"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(apiTasksRead).toBeLessThan(history / 10);

    // And the restarted pair works as before.
    const res = await call(`${after}/api/v1/metrics/upload`, ada, {
      method: 'POST',
      body: { metric_name: 'restart.after', values: [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }] },
    });
    expect((await waitForTask(after, ada, res.json.task_id as string)).status).toBe('succeeded');
  }, 300_000);
});
