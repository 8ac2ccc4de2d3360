import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFilesProjector } from '../../apps/ingest/src/read-models/files.ts';
import type { RunningReadModelProjector } from '../../apps/ingest/src/read-models/projector.ts';
import { clickhouseFileReadModel, clickhouseFileReadModelWriter } from '@meridian/clickhouse';
import { fileDefinedFrom, foldFiles, type Caller, type FileEvent } from '@meridian/domain';
import { listFiles, usageOf } from '../support/files-reference.ts';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

const codec = createEventCodec<FileEvent>();
const users = ['ada', 'bob', 'carol'];
const callers: Caller[] = [...users.map((user_name) => ({ user_name, is_admin: false })), { user_name: 'root', is_admin: true }, { user_name: 'nobody', is_admin: false }];
const defined = (file_id: string, owner: string, at: number, name = `${file_id.slice(0, 8)}.csv`): FileEvent => fileDefinedFrom({
  type: 'FileDefinitionRequested', task_id: randomUUID(), file_id, user_name: owner, at, file_name: name, description: `about ${file_id}`,
  content_type: 'text/csv', staged_object: 'staging/x', size: 100 + (at % 50), sha256: Buffer.alloc(32, at % 256), enforce_schema: false,
});

describe('files projector: files topic → the files read model, exactly once', () => {
  const settings = isolatedSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000' });
  const platform: Platform = createPlatform(settings, createLogger({ name: 'files-projector-int', level: settings.LOG_LEVEL }), 'files-projector-int');
  const readModel = clickhouseFileReadModel(platform.clickhouseOptions);
  const writer = clickhouseFileReadModelWriter(platform.clickhouse);
  const log: FileEvent[] = [];
  const ids: string[] = [];
  let projector: RunningReadModelProjector | null = null;
  let clock = 1_700_000_000_000;

  async function send(events: FileEvent[]): Promise<void> {
    const producer = await platform.producer();
    for (let i = 0; i < events.length; i += 10) {
      const chunk = events.slice(i, i + 10);
      for (const e of chunk) await appendEvents(producer, codec, platform.topics.files, e.file_id, [e]);
      log.push(...chunk);
    }
  }

  /** Files defined, shared, re-shared, revoked, described, deleted, defined again after deletion, and events about unknown files. */
  function lives(n: number): FileEvent[] {
    const events: FileEvent[] = [];
    for (let i = 0; i < n; i++) {
      const id = randomUUID();
      ids.push(id);
      const owner = users[i % 3]!;
      const other = users[(i + 1) % 3]!;
      events.push(defined(id, owner, clock++, i % 4 === 0 ? `Report-${i}.CSV` : `data-${i}.csv`));
      if (i % 2 === 0) events.push({ type: 'FileAccessGranted', file_id: id, user_name: other, access: 'r', at: clock++, actor: owner });
      if (i % 4 === 0) events.push({ type: 'FileAccessGranted', file_id: id, user_name: other, access: 'rw', at: clock++, actor: owner });
      if (i % 6 === 0) events.push({ type: 'FileAccessRevoked', file_id: id, user_name: other, at: clock++, actor: owner });
      if (i % 3 === 0) events.push({ type: 'FileDescriptionChanged', file_id: id, description: `changed ${i}`, at: clock++, actor: owner });
      if (i % 5 === 0) events.push({ type: 'FileDeleted', file_id: id, at: clock++, actor: owner }, defined(id, owner, clock++));
      if (i % 7 === 0) events.push({ type: 'FileAccessGranted', file_id: randomUUID(), user_name: other, access: 'r', at: clock++, actor: owner });
    }
    return events;
  }

  async function untilCovered(): Promise<void> {
    const ends = await platform.admin.fetchTopicOffsets(platform.topics.files);
    await waitFor('the read model to cover the log', async () => {
      const positions = await readModel.positions();
      return ends.every((e) => Number(e.high) === 0 || (positions.get(e.partition) ?? -1) >= Number(e.high) - 1) ? true : undefined;
    }, 60_000, 100);
  }

  /** Every page of a caller's list, as the api pages it. */
  async function allPages(caller: Caller, name_contains?: string, limit = 7) {
    const out: string[] = [];
    let cursor: number | undefined;
    for (;;) {
      const page = await readModel.list(caller, { limit, cursor, name_contains });
      out.push(...page.files.map(({ file, access }) => `${file.file_id} ${access} ${file.owner} ${file.file_name} ${file.description} ${file.created_at} ${file.seq}`));
      if (page.next_cursor === null) return out;
      cursor = page.next_cursor;
    }
  }

  beforeAll(async () => {
    await platform.prepare();
    await platform.admin.connect();
  });
  afterAll(async () => {
    await projector?.stop();
    await platform.close();
  });

  it('rows, lists, usage and the next seq equal the fold of the log, across a restart and a stop mid-stream', async () => {
    await send(lives(30));
    projector = await startFilesProjector(platform, readModel, writer);
    await untilCovered();
    await projector.stop();

    await send(lives(30));
    const before = (await readModel.positions()).get(0) ?? -1;
    projector = await startFilesProjector(platform, readModel, writer);
    await waitFor('the projector to move', async () => (((await readModel.positions()).get(0) ?? -1) > before ? true : undefined), 60_000, 10);
    await projector.stop();
    await send(lives(10));
    projector = await startFilesProjector(platform, readModel, writer);
    await untilCovered();

    const folded = foldFiles(log);
    expect(await readModel.nextSeq()).toBe(folded.defined);
    for (const id of ids) {
      const file = folded.files.get(id);
      const got = await readModel.get(id);
      expect(got && { ...got, grants: [...got.grants] }, id).toEqual(file && { ...file, grants: [...file.grants] });
    }
    const rows = await readModel.rows(ids);
    expect(rows.filter((r) => r.deleted).map((r) => r.file.file_id).sort()).toEqual(ids.filter((id) => folded.deleted.has(id)).sort());
    for (const caller of callers) {
      for (const needle of [undefined, 'report', 'REPORT-1', 'nothing like it', "' OR 1=1 --"]) {
        const expected = listFiles(folded, caller, { limit: 100_000, name_contains: needle }).files
          .map(({ file, access }) => `${file.file_id} ${access} ${file.owner} ${file.file_name} ${file.description} ${file.created_at} ${file.seq}`);
        expect(await allPages(caller, needle), `${caller.user_name} ${needle}`).toEqual(expected);
      }
    }
    const usage = await readModel.usage([...users, 'nobody']);
    for (const user of users) expect(usage.get(user), user).toEqual(usageOf(folded).get(user) ?? { bytes: 0, files: 0 });
    expect(usage.has('nobody')).toBe(false);
  });
});
