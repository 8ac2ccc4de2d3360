import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFilesProjector } from '../../apps/ingest/src/read-models/files.ts';
import type { RunningReadModelProjector } from '../../apps/ingest/src/read-models/projector.ts';
import { startTasksProjector } from '../../apps/ingest/src/read-models/tasks.ts';
import { clickhouseFileReadModel, clickhouseFileReadModelWriter, clickhouseTaskReadModel, clickhouseTaskReadModelWriter } from '@meridian/clickhouse';
import { fileDefinedFrom, foldFiles, foldTasks, type FileEvent, type MetricsUploadRequested, type TaskEvent } from '@meridian/domain';
import { listFiles } from '../support/files-reference.ts';
import { createEventCodec, type EventLike } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { FILES_READ_MODEL, rebuildReadModel, TASKS_READ_MODEL, type ReadModelKind } from '@meridian/replay';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

const taskCodec = createEventCodec<TaskEvent>();
const fileCodec = createEventCodec<FileEvent>();
let clock = 1_700_000_000_000;

function taskLives(n: number): TaskEvent[] {
  const events: TaskEvent[] = [];
  for (let i = 0; i < n; i++) {
    const task_id = randomUUID();
    const requested: MetricsUploadRequested = {
      type: 'MetricsUploadRequested',
      task_id,
      user_name: `u${i % 3}`,
      at: clock++,
      metric_name: 'cpu',
      on_error: 'fail',
      source: 'json_body',
      payload: Buffer.from('{}'),
      staged_object: null,
      payload_bytes: 2,
      payload_sha256: Buffer.alloc(32, 1),
      idempotency_key: 'k',
    };
    events.push(requested);
    if (i % 4 === 0) continue;
    events.push({ type: 'TaskStarted', task_id, at: clock++ });
    if (i % 4 === 1) continue;
    events.push(
      i % 4 === 2
        ? { type: 'TaskFailed', task_id, reason: 'bad', rows_total: 1, rows_rejected: 1, errors: [], at: clock++ }
        : { type: 'UploadParsed', task_id, rows_total: 3, points_accepted: 3, rows_rejected: 0, errors: [], partitions: [], metrics: ['cpu'], at: clock++ },
    );
  }
  return events;
}

function fileLives(n: number): FileEvent[] {
  const events: FileEvent[] = [];
  for (let i = 0; i < n; i++) {
    const file_id = randomUUID();
    const owner = `u${i % 3}`;
    events.push(
      fileDefinedFrom({
        type: 'FileDefinitionRequested',
        task_id: randomUUID(),
        file_id,
        user_name: owner,
        at: clock++,
        file_name: `f${i}.csv`,
        description: '',
        content_type: 'text/csv',
        staged_object: 'staging/x',
        size: 10 + i,
        sha256: Buffer.alloc(32, i % 256),
        enforce_schema: false,
      }),
    );
    if (i % 2 === 0) events.push({ type: 'FileAccessGranted', file_id, user_name: `u${(i + 1) % 3}`, access: 'r', at: clock++, actor: owner });
    if (i % 3 === 0) events.push({ type: 'FileDescriptionChanged', file_id, description: `d${i}`, at: clock++, actor: owner });
    if (i % 5 === 0) events.push({ type: 'FileDeleted', file_id, at: clock++, actor: owner });
  }
  return events;
}

describe('replay rebuild tasks|files: rebuilt, verified and swapped in while the live projectors run', () => {
  const settings = isolatedSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000', MERIDIAN_TASK_RETENTION_INTERVAL_MS: '3600000' });
  const platform: Platform = createPlatform(settings, createLogger({ name: 'rm-rebuild-int', level: settings.LOG_LEVEL }), 'rm-rebuild-int');
  const tasks = clickhouseTaskReadModel(platform.clickhouseOptions);
  const files = clickhouseFileReadModel(platform.clickhouseOptions);
  const taskLog: TaskEvent[] = [];
  const fileLog: FileEvent[] = [];
  const projectors: RunningReadModelProjector[] = [];

  async function send<E extends EventLike & { task_id?: string; file_id?: string }>(
    topic: string,
    codec: ReturnType<typeof createEventCodec<E>>,
    events: E[],
    log: E[],
  ) {
    const producer = await platform.producer();
    for (const e of events) {
      await appendEvents(producer, codec, topic, (e.task_id ?? e.file_id)!, [e]);
      log.push(e);
    }
  }
  const sendTasks = (events: TaskEvent[]) => send(platform.topics.tasks, taskCodec, events, taskLog);
  const sendFiles = (events: FileEvent[]) => send(platform.topics.files, fileCodec, events, fileLog);

  async function covered(topic: string, positions: () => Promise<Map<number, number>>): Promise<void> {
    const ends = await platform.admin.fetchTopicOffsets(topic);
    await waitFor(
      `the read model to cover ${topic}`,
      async () => {
        const at = await positions();
        return ends.every((e) => Number(e.high) === 0 || (at.get(e.partition) ?? -1) >= Number(e.high) - 1) ? true : undefined;
      },
      60_000,
      100,
    );
  }
  const sql = async (query: string) => await (await platform.clickhouse.query({ query, format: 'TabSeparated' })).text();
  const insert = (query: string) => platform.clickhouse.command({ query });
  /** A read model's tables as text, every row after the merge (of the listing, those that give access), in a fixed order. */
  const dump = async (kind: ReadModelKind, tables = kind.live) =>
    kind.name === 'tasks'
      ? sql(`SELECT task_id, state FROM ${tables.tasks} FINAL ORDER BY task_id`)
      : [
          await sql(`SELECT file_id, state, deleted FROM ${tables.files} FINAL ORDER BY file_id`),
          await sql(
            `SELECT * FROM (SELECT user_name, seq, file_id, access, description FROM ${tables.listing} FINAL) WHERE access != '' ORDER BY user_name, seq`,
          ),
        ].join('\n--\n');

  beforeAll(async () => {
    await platform.prepare();
    await platform.admin.connect();
    projectors.push(await startTasksProjector(platform, platform.options.tasksReadModel, tasks, clickhouseTaskReadModelWriter(platform.clickhouse)));
    projectors.push(await startFilesProjector(platform, platform.options.filesReadModel, files, clickhouseFileReadModelWriter(platform.clickhouse)));
  });
  afterAll(async () => {
    await Promise.all(projectors.map((p) => p.stop()));
    await platform.close();
  });

  it('a rebuild of each gives tables identical to the live ones, and verification says so', async () => {
    await sendTasks(taskLives(40));
    await sendFiles(fileLives(40));
    await covered(platform.topics.tasks, () => tasks.positions());
    await covered(platform.topics.files, () => files.positions());
    for (const kind of [TASKS_READ_MODEL, FILES_READ_MODEL]) {
      const result = await rebuildReadModel(platform, kind, 'never');
      expect(result.verification, kind.name).toMatchObject({ verified: true, differing: 0 });
      expect(result.verification.compared).toBeGreaterThanOrEqual(40);
      expect(await dump(kind, kind.rebuilt), kind.name).toBe(await dump(kind));
    }
  });

  it('a damaged live row fails verification (no swap if-verified); a swap replaces it while events keep arriving, and nothing is lost', async () => {
    const task = taskLog.find((e) => e.type === 'UploadParsed')!.task_id;
    await insert(
      `INSERT INTO tasks SELECT task_id, user_name, kind, status, created_at, updated_at, replaceOne(state, '"status"', '"tampered":1,"status"'), kafka_partition, kafka_offset FROM tasks FINAL WHERE task_id = '${task}'`,
    );
    const live = foldFiles(fileLog);
    const file = fileLog.find((e) => e.type === 'FileDescriptionChanged' && live.files.has(e.file_id))!.file_id;
    await insert(
      `INSERT INTO file_listing SELECT user_name, seq, file_id, access, owner, file_name, name_lower, 'tampered', size, created_at, kafka_partition, kafka_offset FROM file_listing FINAL WHERE file_id = '${file}'`,
    );
    for (const kind of [TASKS_READ_MODEL, FILES_READ_MODEL]) {
      const refused = await rebuildReadModel(platform, kind, 'if-verified');
      expect(refused.verification.verified, kind.name).toBe(false);
      expect(refused.swapped).toBeNull();
      expect(refused.notSwapped).toMatch(/verification failed/);
    }

    // Events keep arriving through both swaps, a round every quarter second: paced by the clock, not
    // by how fast the machine sends, so what is checked afterwards grows with the swaps' time only.
    let writing = true;
    const writer = (async () => {
      while (writing) {
        const round = Promise.all([sendTasks(taskLives(3)), sendFiles(fileLives(3))]);
        await Promise.all([round, new Promise((r) => setTimeout(r, 250))]);
      }
    })();
    try {
      for (const kind of [TASKS_READ_MODEL, FILES_READ_MODEL]) {
        const swapped = await rebuildReadModel(platform, kind, 'always');
        expect(swapped.swapped, kind.name).not.toBeNull();
      }
      await sendTasks(taskLives(3));
      await sendFiles(fileLives(3));
    } finally {
      writing = false;
      await writer;
    }
    await covered(platform.topics.tasks, () => tasks.positions());
    await covered(platform.topics.files, () => files.positions());

    // The live read models are the fold of everything written: the damage gone, nothing lost or doubled.
    const foldedTasks = foldTasks(taskLog);
    const ids = [...foldedTasks.keys()];
    // Read back 8 at a time: one query after another made this check the test's longest step under load.
    for (let i = 0; i < ids.length; i += 8) {
      const chunk = ids.slice(i, i + 8);
      const got = await Promise.all(chunk.map((id) => tasks.get(id)));
      chunk.forEach((id, j) => expect(got[j], id).toEqual(JSON.parse(JSON.stringify(foldedTasks.get(id)))));
    }
    expect(await sql(`SELECT count() FROM tasks FINAL`)).toBe(`${foldedTasks.size}\n`);
    const foldedFiles = foldFiles(fileLog);
    for (const user of ['u0', 'u1', 'u2']) {
      const caller = { user_name: user, is_admin: false };
      const expected = listFiles(foldedFiles, caller, { limit: 100_000 }).files.map(({ file: f, access }) => [f.file_id, access, f.description, f.seq]);
      expect(
        (await files.list(caller, { limit: 1000 })).files.map(({ file: f, access }) => [f.file_id, access, f.description, f.seq]),
        user,
      ).toEqual(expected);
    }
    expect(await files.nextSeq()).toBe(foldedFiles.defined);
    // The replaced tables are kept beside the live ones.
    expect(
      await sql(`SELECT count() FROM system.tables WHERE database = currentDatabase() AND name IN ('tasks_retired', 'files_retired', 'file_listing_retired')`),
    ).toBe('3\n');
  });

  it("a share written into the live files read model just before the swap survives it, and the file's next change keeps it", async () => {
    const [defined] = fileLives(1);
    await sendFiles([defined!]);
    const file = defined!.file_id;
    const owner = 'u0'; // fileLives' first file's owner
    await covered(platform.topics.files, () => files.positions());
    const swapped = await rebuildReadModel(platform, FILES_READ_MODEL, 'always', {
      // After the rebuild's last catch-up: the share reaches the live tables only, the window in which it was lost.
      beforeFreeze: async () => {
        await sendFiles([{ type: 'FileAccessGranted', file_id: file, user_name: 'late-grantee', access: 'r', at: clock++, actor: owner }]);
        await covered(platform.topics.files, () => files.positions());
      },
    });
    expect(swapped.swapped).not.toBeNull();
    // The live projector's next event for the file reads its row back from the swapped-in tables.
    await sendFiles([{ type: 'FileDescriptionChanged', file_id: file, description: 'after the swap', at: clock++, actor: owner }]);
    await covered(platform.topics.files, () => files.positions());
    const [row] = await files.rows([file]);
    expect(row?.file.description).toBe('after the swap');
    expect([...row!.file.grants.keys()]).toContain('late-grantee');
    expect((await files.list({ user_name: 'late-grantee', is_admin: false }, { limit: 10 })).files.map(({ file: f }) => f.file_id)).toEqual([file]);
    // No stand-in is left behind.
    expect(await sql(`SELECT count() FROM system.tables WHERE database = currentDatabase() AND name LIKE '%_frozen%'`)).toBe('0\n');
  });

  it('a swap while the live files projector is stopped: the rebuild is ahead, so its group is made to re-read its positions from the new tables', async () => {
    const filesProjector = projectors.splice(1, 1)[0]!;
    await filesProjector.stop();
    const [defined] = fileLives(1);
    await sendFiles([defined!, { type: 'FileAccessGranted', file_id: defined!.file_id, user_name: 'while-stopped', access: 'r', at: clock++, actor: 'u0' }]);
    const swapped = await rebuildReadModel(platform, FILES_READ_MODEL, 'always', { waitForLiveMs: 500 });
    expect(swapped.swapped).toMatchObject({ nudged: true });
    projectors.push(await startFilesProjector(platform, platform.options.filesReadModel, files, clickhouseFileReadModelWriter(platform.clickhouse)));
    await sendFiles([{ type: 'FileDescriptionChanged', file_id: defined!.file_id, description: 'after the restart', at: clock++, actor: 'u0' }]);
    await covered(platform.topics.files, () => files.positions());
    const [row] = await files.rows([defined!.file_id]);
    expect(row?.file.description).toBe('after the restart');
    expect([...row!.file.grants.keys()]).toContain('while-stopped');
    expect(await files.nextSeq()).toBe(foldFiles(fileLog).defined);
  });
});
