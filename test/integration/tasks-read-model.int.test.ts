import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTasksProjector, type RunningTasksProjector } from '../../apps/ingest/src/read-models/tasks.ts';
import { clickhouseTaskReadModel, clickhouseTaskReadModelWriter } from '@meridian/clickhouse';
import { applyTaskEvent, foldTasks, initialTasks, type MetricsUploadRequested, type Position, type Task, type TaskEvent, type TaskRow } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

const codec = createEventCodec<TaskEvent>();
const requested = (task_id: string, user_name: string, at: number): MetricsUploadRequested => ({
  type: 'MetricsUploadRequested',
  task_id,
  user_name,
  at,
  metric_name: 'cpu',
  on_error: 'fail',
  source: 'json_body',
  payload: Buffer.from('{}'),
  staged_object: null,
  payload_bytes: 2,
  payload_sha256: Buffer.alloc(32, 1),
  idempotency_key: 'k',
});
const started = (task_id: string, at: number): TaskEvent => ({ type: 'TaskStarted', task_id, at });
const parsed = (task_id: string, at: number): TaskEvent => ({
  type: 'UploadParsed',
  task_id,
  rows_total: 3,
  points_accepted: 3,
  rows_rejected: 0,
  errors: [],
  partitions: [],
  metrics: ['cpu'],
  at,
});
const failed = (task_id: string, at: number): TaskEvent => ({
  type: 'TaskFailed',
  task_id,
  reason: 'bad row',
  rows_total: 1,
  rows_rejected: 1,
  errors: [{ row: 1, column: 'value', reason: 'x' }],
  at,
});
/** A task as JSON gives it back (the read model stores the fold's value as JSON). */
const asStored = (task: Task | undefined) => (task === undefined ? undefined : (JSON.parse(JSON.stringify(task)) as Task));

describe('tasks projector: tasks topic → the tasks read model, exactly once', () => {
  const settings = isolatedSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000', MERIDIAN_TASK_RETENTION_INTERVAL_MS: '3600000' });
  const platform: Platform = createPlatform(settings, createLogger({ name: 'tasks-projector-int', level: settings.LOG_LEVEL }), 'tasks-projector-int');
  const readModel = clickhouseTaskReadModel(platform.clickhouseOptions);
  const writer = clickhouseTaskReadModelWriter(platform.clickhouse);
  const log: Array<{ event: TaskEvent; position: Position }> = [];
  let projector: RunningTasksProjector | null = null;
  let clock = 1_700_000_000_000;

  async function send(events: TaskEvent[]): Promise<void> {
    const producer = await platform.producer();
    for (const event of events) {
      const position = await appendEvents(producer, codec, platform.topics.tasks, event.task_id, [event]);
      log.push({ event, position: position! });
    }
  }

  /** Some tasks' lives, interleaved: finished, failed, left queued or running, commands repeated before and after the end. */
  function lives(n: number): TaskEvent[] {
    const events: TaskEvent[] = [];
    for (let i = 0; i < n; i++) {
      const id = randomUUID();
      const user = `u${i % 3}`;
      events.push(requested(id, user, clock++));
      if (i % 5 === 0) continue; // stays queued
      events.push(started(id, clock++));
      if (i % 5 === 1) {
        events.push(started(id, clock++));
        continue;
      } // running, two runs open
      if (i % 5 === 2) events.push(requested(id, user, clock++)); // a repeat before the end
      events.push(i % 5 === 3 ? failed(id, clock++) : parsed(id, clock++));
      if (i % 2 === 0) events.push(requested(id, user, clock++)); // a repeat after the end: must not reopen it
    }
    return events;
  }

  async function untilCovered(): Promise<void> {
    const ends = await platform.admin.fetchTopicOffsets(platform.topics.tasks);
    await waitFor(
      'the read model to cover the log',
      async () => {
        const positions = await readModel.positions();
        return ends.every((e) => Number(e.high) === 0 || (positions.get(e.partition) ?? -1) >= Number(e.high) - 1) ? true : undefined;
      },
      60_000,
      100,
    );
  }

  beforeAll(async () => {
    await platform.prepare();
    await platform.admin.connect();
  });
  afterAll(async () => {
    await projector?.stop();
    await platform.close();
  });

  it("each task's row equals the fold of the log, across restarts, a stop mid-stream and a row written ahead of its position", async () => {
    await send(lives(30));
    projector = await startTasksProjector(platform, platform.options.tasksReadModel, readModel, writer);
    await untilCovered();
    await projector.stop();

    // Stopped as soon as it has moved: wherever that is, the next one resumes from the read model.
    await send(lives(30));
    const before = await readModel.positions();
    projector = await startTasksProjector(platform, platform.options.tasksReadModel, readModel, writer);
    await waitFor(
      'the projector to move',
      async () =>
        (await readModel.positions()).size > before.size || [...(await readModel.positions())].some(([p, o]) => o > (before.get(p) ?? -1)) ? true : undefined,
      60_000,
      10,
    );
    await projector.stop();
    projector = null;

    // A crash between a batch's rows and its position: a running task's row ahead of the position.
    const id = randomUUID();
    await send([requested(id, 'u0', clock++), started(id, clock++), started(id, clock++)]);
    const mine = log.filter((e) => e.event.task_id === id);
    const ahead = initialTasks();
    for (const e of mine) applyTaskEvent(ahead, e.event);
    const last = mine[mine.length - 1]!.position;
    const aheadRow: TaskRow = { task: ahead.get(id)!, partition: last.partition, offset: last.offset };
    await writer.write([aheadRow], new Map());

    projector = await startTasksProjector(platform, platform.options.tasksReadModel, readModel, writer);
    await untilCovered();

    const folded = foldTasks(log.map((e) => e.event));
    for (const [taskId, task] of folded) expect(await readModel.get(taskId), taskId).toEqual(asStored(task));
    expect((await readModel.get(id))?.open_runs).toBe(2);
    // One row per task once merged, and each user's listing holds exactly their tasks, newest first.
    for (const user of ['u0', 'u1', 'u2']) {
      const listed = await readModel.list({ user_name: user, limit: 1000 });
      const expected = [...folded.values()].filter((t) => t.user_name === user).sort((a, b) => b.created_at - a.created_at);
      expect(listed.map((t) => t.task_id)).toEqual(expected.map((t) => t.task_id));
    }
    // The unfinished ones, as a starting process reads them.
    const unfinished = (await readModel.unfinished()).map((r) => r.task.task_id).sort();
    expect(unfinished).toEqual(
      [...folded.values()]
        .filter((t) => t.status === 'queued' || t.status === 'running')
        .map((t) => t.task_id)
        .sort(),
    );
  });

  it("commits its group's offsets with the batches, so that a new process does not fetch the topic again from offset 0", async () => {
    // The projector of the test above runs and covers the log; its events came from an idempotent producer (no markers).
    const ends = await platform.admin.fetchTopicOffsets(platform.topics.tasks);
    await waitFor(
      "the group's committed offsets to reach the log's end",
      async () => {
        const [committed] = await platform.admin.fetchOffsets({ groupId: platform.groups.tasksProjector, topics: [platform.topics.tasks] });
        const at = new Map(committed!.partitions.map((p) => [p.partition, Number(p.offset)]));
        return ends.every((e) => Number(e.high) === 0 || at.get(e.partition) === Number(e.high)) ? true : undefined;
      },
      30_000,
      100,
    );
  });

  it("writes a fetch's batches of every partition together: one insert per table", async () => {
    await projector?.stop();
    projector = null;
    const blocks = async (): Promise<Map<string, number>> => {
      const result = await platform.clickhouse.query({
        query: `SELECT table, toString(max(max_block_number)) AS n FROM system.parts WHERE database = '${settings.CLICKHOUSE_DATABASE}' AND table IN ('tasks', 'tasks_by_id', 'tasks_positions') GROUP BY table`,
        format: 'JSONEachRow',
      });
      return new Map((await result.json<{ table: string; n: string }>()).map((r) => [r.table, Number(r.n)]));
    };
    const before = await blocks();
    const sent = log.length;
    // Written while no projector runs: one fetch takes them all, from every partition.
    await send(lives(12));
    expect(new Set(log.slice(sent).map((e) => e.position.partition)).size).toBeGreaterThan(1);

    projector = await startTasksProjector(platform, platform.options.tasksReadModel, readModel, writer);
    await untilCovered();
    const folded = foldTasks(log.map((e) => e.event));
    for (const { event } of log.slice(sent)) expect(await readModel.get(event.task_id), event.task_id).toEqual(asStored(folded.get(event.task_id)));
    const after = await blocks();
    expect(Object.fromEntries([...after].map(([table, n]) => [table, n - (before.get(table) ?? 0)]))).toEqual({ tasks: 1, tasks_by_id: 1, tasks_positions: 1 });
  });

  it('a command repeated after its task finished does not reopen the row, also when it arrives long after', async () => {
    const id = randomUUID();
    await send([requested(id, 'u1', clock++), started(id, clock++), parsed(id, clock++)]);
    await untilCovered();
    await send([requested(id, 'u1', clock++)]);
    await untilCovered();
    expect((await readModel.get(id))?.status).toBe('succeeded');
    expect((await readModel.list({ user_name: 'u1', limit: 1000 })).filter((t) => t.task_id === id).map((t) => t.status)).toEqual(['succeeded']);
    expect((await readModel.unfinished()).map((r) => r.task.task_id)).not.toContain(id);
    expect(await readModel.finishedAmong([id, randomUUID()])).toEqual(new Set([id]));
  });

  it('lists pages by the key of the last row, filtered by status and kind after the merge', async () => {
    const all = await readModel.list({ user_name: 'u2', limit: 1000 });
    const firstPage = await readModel.list({ user_name: 'u2', limit: 4 });
    const last = firstPage[firstPage.length - 1]!;
    const secondPage = await readModel.list({ user_name: 'u2', limit: 4, before: { created_at: last.created_at, task_id: last.task_id } });
    expect([...firstPage, ...secondPage].map((t) => t.task_id)).toEqual(all.slice(0, 8).map((t) => t.task_id));
    const failedOnes = await readModel.list({ user_name: 'u2', status: 'failed', limit: 1000 });
    expect(failedOnes.map((t) => t.task_id)).toEqual(all.filter((t) => t.status === 'failed').map((t) => t.task_id));
    expect(await readModel.list({ user_name: 'u2', kind: 'file_definition', limit: 1000 })).toEqual([]);
    expect(await readModel.list({ user_name: "u2' OR 1=1 --", limit: 1000 })).toEqual([]);
  });

  it('retention removes every row of finished tasks last changed before the cut, and nothing else', async () => {
    const now = Date.now();
    const day = 86_400_000;
    const oldFinished = randomUUID();
    const oldQueued = randomUUID();
    const recentFinished = randomUUID();
    const task = (task_id: string, status: Task['status'], updated_at: number): Task => ({
      ...asStored(foldTasks([requested(task_id, 'r', now - 40 * day)]).get(task_id))!,
      status,
      updated_at,
    });
    const rows: TaskRow[] = [
      { task: task(oldFinished, 'queued', now - 40 * day), partition: 0, offset: 1 },
      { task: task(oldFinished, 'succeeded', now - 31 * day), partition: 0, offset: 2 },
      { task: task(oldQueued, 'queued', now - 40 * day), partition: 0, offset: 3 },
      { task: task(recentFinished, 'failed', now - 1 * day), partition: 0, offset: 4 },
    ];
    for (const row of rows) await writer.write([row], new Map()); // separate parts, as separate batches write them
    await writer.expire(now - 30 * day);
    // Each table's DELETE is a mutation of its own, run in the background (18.16 has no
    // mutations_sync): the lookup (tasks_by_id) and the list (tasks) lose the task each in its turn.
    const listed = async () => (await readModel.list({ user_name: 'r', limit: 10 })).map((t) => t.task_id);
    await waitFor(
      'the expired task to go',
      async () => ((await readModel.get(oldFinished)) === undefined && !(await listed()).includes(oldFinished) ? true : undefined),
      30_000,
      100,
    );
    expect((await readModel.get(oldQueued))?.status).toBe('queued');
    expect((await readModel.get(recentFinished))?.status).toBe('failed');
    expect((await listed()).sort()).toEqual([oldQueued, recentFinished].sort());
  });
});

describe('tasks projector: retention on its timer', () => {
  // About 0.9 s of retention, swept every 200 ms.
  const settings = isolatedSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000', MERIDIAN_TASK_RETENTION_DAYS: '0.00001', MERIDIAN_TASK_RETENTION_INTERVAL_MS: '200' });
  const platform: Platform = createPlatform(settings, createLogger({ name: 'tasks-retention-int', level: settings.LOG_LEVEL }), 'tasks-retention-int');
  const readModel = clickhouseTaskReadModel(platform.clickhouseOptions);
  let projector: RunningTasksProjector | null = null;
  beforeAll(async () => {
    await platform.prepare();
  });
  afterAll(async () => {
    await projector?.stop();
    await platform.close();
  });

  it('removes a finished task once MERIDIAN_TASK_RETENTION_DAYS have passed since its last change; an unfinished one stays', async () => {
    projector = await startTasksProjector(platform, platform.options.tasksReadModel, readModel, clickhouseTaskReadModelWriter(platform.clickhouse));
    const done = randomUUID();
    const open = randomUUID();
    const producer = await platform.producer();
    const now = Date.now();
    await appendEvents(producer, codec, platform.topics.tasks, done, [requested(done, 'r', now), started(done, now), parsed(done, now)]);
    await appendEvents(producer, codec, platform.topics.tasks, open, [requested(open, 'r', now)]);
    await waitFor('both tasks in the read model', async () => ((await readModel.get(done)) && (await readModel.get(open)) ? true : undefined), 30_000, 50);
    await waitFor('the finished task to expire', async () => ((await readModel.get(done)) === undefined ? true : undefined), 30_000, 100);
    expect((await readModel.get(open))?.status).toBe('queued');
  });
});
