import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFilesProjector } from '../../apps/ingest/src/read-models/files.ts';
import type { RunningReadModelProjector } from '../../apps/ingest/src/read-models/projector.ts';
import { clickhouseBlobReferences, clickhouseFileReadModel, clickhouseFileReadModelWriter, readMigrations } from '@meridian/clickhouse';
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
const callers: Caller[] = [
  ...users.map((user_name) => ({ user_name, is_admin: false })),
  { user_name: 'root', is_admin: true },
  { user_name: 'nobody', is_admin: false },
];
const defined = (file_id: string, owner: string, at: number, name = `${file_id.slice(0, 8)}.csv`): FileEvent =>
  fileDefinedFrom({
    type: 'FileDefinitionRequested',
    task_id: randomUUID(),
    file_id,
    user_name: owner,
    at,
    file_name: name,
    description: `about ${file_id}`,
    content_type: 'text/csv',
    staged_object: 'staging/x',
    size: 100 + (at % 50),
    sha256: Buffer.alloc(32, at % 256),
    enforce_schema: false,
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

  /** Every page of a caller's list, as the api pages it. */
  async function allPages(caller: Caller, name_contains?: string, limit = 7) {
    const out: string[] = [];
    let cursor: number | undefined;
    for (;;) {
      const page = await readModel.list(caller, { limit, cursor, name_contains });
      out.push(
        ...page.files.map(({ file, access }) => `${file.file_id} ${access} ${file.owner} ${file.file_name} ${file.description} ${file.created_at} ${file.seq}`),
      );
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
    projector = await startFilesProjector(platform, platform.options.filesReadModel, readModel, writer);
    await untilCovered();
    await projector.stop();

    await send(lives(30));
    const before = (await readModel.positions()).get(0) ?? -1;
    projector = await startFilesProjector(platform, platform.options.filesReadModel, readModel, writer);
    await waitFor('the projector to move', async () => (((await readModel.positions()).get(0) ?? -1) > before ? true : undefined), 60_000, 10);
    await projector.stop();
    await send(lives(10));
    projector = await startFilesProjector(platform, platform.options.filesReadModel, readModel, writer);
    await untilCovered();

    const folded = foldFiles(log);
    expect(await readModel.nextSeq()).toBe(folded.defined);
    for (const id of ids) {
      const file = folded.files.get(id);
      const got = await readModel.get(id);
      expect(got && { ...got, grants: [...got.grants] }, id).toEqual(file && { ...file, grants: [...file.grants] });
    }
    const rows = await readModel.rows(ids);
    expect(
      rows
        .filter((r) => r.deleted)
        .map((r) => r.file.file_id)
        .sort(),
    ).toEqual(ids.filter((id) => folded.deleted.has(id)).sort());
    for (const caller of callers) {
      for (const needle of [undefined, 'report', 'REPORT-1', 'nothing like it', "' OR 1=1 --"]) {
        const expected = listFiles(folded, caller, { limit: 100_000, name_contains: needle }).files.map(
          ({ file, access }) => `${file.file_id} ${access} ${file.owner} ${file.file_name} ${file.description} ${file.created_at} ${file.seq}`,
        );
        expect(await allPages(caller, needle), `${caller.user_name} ${needle}`).toEqual(expected);
      }
    }
    const usage = await readModel.usage([...users, 'nobody']);
    for (const user of users) expect(usage.get(user), user).toEqual(usageOf(folded).get(user) ?? { bytes: 0, files: 0 });
    expect(usage.has('nobody')).toBe(false);
  });

  it('blob references (migration 006): which blobs live files reference and which deletions released them, as the fold has them', async () => {
    const references = clickhouseBlobReferences(platform.clickhouseOptions, platform.clickhouse);
    const folded = foldFiles(log);
    const every = [...new Set(log.flatMap((e) => (e.type === 'FileDefined' ? [e.sha256.toString('hex')] : [])))];
    const live = [...new Set([...folded.files.values()].map((f) => f.sha256))].sort();
    expect([...(await references.referenced(every))].sort()).toEqual(live);
    expect(live.length).toBeGreaterThan(0);
    expect(live.length).toBeLessThan(every.length); // some blobs lost their every file
    // Each deletion the fold applied, at its offset, oldest first, a page at a time.
    const end = (await readModel.positions()).get(0)!;
    const deletions = await references.released(0, -1, end, 100_000);
    expect(deletions.length).toBe(log.filter((e) => e.type === 'FileDeleted' && ids.includes(e.file_id)).length);
    expect(deletions.map((d) => d.offset)).toEqual([...deletions.map((d) => d.offset)].sort((a, b) => a - b));
    const firstPage = await references.released(0, -1, end, 2);
    const next = await references.released(0, firstPage[1]!.offset, end, 100_000);
    expect([...firstPage, ...next]).toEqual(deletions);
    // The sweep position only moves forward.
    expect(await references.swept()).toEqual(new Map());
    await references.recordSwept(new Map([[0, 9]]));
    await references.recordSwept(new Map([[0, 4]]));
    expect(await references.swept()).toEqual(new Map([[0, 9]]));
    // A read model projected before migration 006: its backfill gives the same references.
    await platform.clickhouse.command({ query: 'TRUNCATE TABLE file_blobs' });
    expect(await references.referenced(every)).toEqual(new Set());
    const backfill = readMigrations()
      .find((m) => m.version === 6)!
      .statements.find((s) => s.startsWith('INSERT'))!;
    await platform.clickhouse.command({ query: backfill });
    expect([...(await references.referenced(every))].sort()).toEqual(live);
    expect(await references.released(0, -1, end, 100_000)).toEqual(deletions);
  });
});
