import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobStore } from '../../apps/ingest/src/blob-store.ts';
import { BlobCollector } from '../../apps/ingest/src/files/blob-collector.ts';
import { claimKeyOf, promoteUnderClaim, removalKeyOf } from '../../apps/ingest/src/files/blobs.ts';
import { startFilesProjector } from '../../apps/ingest/src/read-models/files.ts';
import type { RunningReadModelProjector } from '../../apps/ingest/src/read-models/projector.ts';
import { clickhouseFileReadModel, clickhouseFileReadModelWriter } from '@meridian/clickhouse';
import { blobKeyOf, fileDefinedFrom, type FileEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Two ingest workers share nothing but Kafka, ClickHouse and MinIO: worker A's blob collector
 * and worker B's definition of the same bytes as a file A is collecting. B's steps are put at
 * fixed points of A's removal (the real bucket, the real files projector and read model), so
 * the interleaving the README's "Blobs" paragraph names is run deterministically, not hoped for.
 */
describe('blob collection against a definition on another worker (real Kafka, ClickHouse, MinIO)', () => {
  const settings = isolatedSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000' });
  const logger = createLogger({ name: 'blob-race-int', level: settings.LOG_LEVEL });
  const platform: Platform = createPlatform(settings, logger, 'blob-race-int');
  const codec = createEventCodec<FileEvent>();
  let projector: RunningReadModelProjector | null = null;
  const collectors: BlobCollector[] = [];

  /** Worker A's bucket: the real one, with B's steps run around A's removal of a blob. */
  const hooks: { before: (() => Promise<void>) | null; after: (() => Promise<void>) | null } = { before: null, after: null };
  const bucketOfA: BlobStore = {
    open: (key) => platform.blobs.open(key),
    size: (key) => platform.blobs.size(key),
    copy: (from, to, size) => platform.blobs.copy(from, to, size),
    put: (key, bytes) => platform.blobs.put(key, bytes),
    list: (prefix) => platform.blobs.list(prefix),
    async remove(key) {
      const isBlob = key.startsWith('blobs/');
      const before = isBlob ? hooks.before : null;
      const after = isBlob ? hooks.after : null;
      if (before) hooks.before = null;
      if (after) hooks.after = null;
      await before?.();
      await platform.blobs.remove(key);
      await after?.();
    },
  };

  const append = async (e: FileEvent) => appendEvents(await platform.log.writer(), codec, platform.topics.files, e.file_id, [e]);

  /** A definition's promotion and commit (the ingest worker's own promoteUnderClaim), its FileDefined appended to the files log. */
  function definition(bytes: Buffer) {
    const fileId = randomUUID();
    const staged = `staging/${fileId}`;
    const sha256 = createHash('sha256').update(bytes).digest();
    const event = fileDefinedFrom({
      type: 'FileDefinitionRequested', task_id: randomUUID(), file_id: fileId, user_name: 'ada', at: Date.now(), file_name: `${fileId}.bin`,
      description: '', content_type: 'application/octet-stream', staged_object: staged, size: bytes.length, sha256, enforce_schema: false,
    });
    return {
      fileId,
      sha256Hex: sha256.toString('hex'),
      async stage() {
        await platform.blobs.put(staged, bytes);
      },
      /** Claims, looks, then awaits `gate` before committing (appending its FileDefined). */
      run(gate: Promise<void> = Promise.resolve(), looked: () => void = () => undefined) {
        return promoteUnderClaim(platform.blobs, { sha256Hex: sha256.toString('hex'), fileId, stagedKey: staged, size: bytes.length }, async (committing) => {
          looked();
          await gate;
          committing();
          await append(event);
        });
      },
    };
  }

  /** A's collector, with the worker's own collaborators but for the bucket's hooks. */
  function startCollectorOfA() {
    const c = new BlobCollector({
      storage: bucketOfA, references: platform.blobReferences, logEnds: () => platform.log.endOffsets(platform.topics.files),
      logger, waitMs: 60_000, intervalMs: 100,
    });
    collectors.push(c);
    c.start();
  }

  /** Until a collection has handled every deletion now in the files log. */
  async function untilSwept(): Promise<void> {
    const ends = await platform.log.endOffsets(platform.topics.files);
    await waitFor('the collector to sweep to the log\'s end', async () => {
      const swept = await platform.blobReferences.swept();
      return [...ends].every(([p, end]) => end === 0 || (swept.get(p) ?? -1) >= end - 1) ? true : undefined;
    }, 120_000, 50);
  }

  const leftovers = async () => [...await platform.blobs.list('_blob-claims/'), ...await platform.blobs.list('_blob-removals/')];

  beforeAll(async () => {
    await platform.prepare();
    projector = await startFilesProjector(platform, clickhouseFileReadModel(platform.clickhouseOptions), clickhouseFileReadModelWriter(platform.clickhouse));
  });
  afterAll(async () => {
    for (const c of collectors) c.stop();
    await projector?.stop();
    await platform.close();
  });

  it.each([
    ['commits after the collection (its claim is what A sees)', false],
    ['commits right after the removal (its FileDefined is what A sees)', true],
  ])('B found the bytes present just before A removed them and %s: the blob stays, and goes once no file has it', async (_what, commitDuringCollection) => {
    const bytes = randomBytes(64 * 1024);
    const blob = blobKeyOf(createHash('sha256').update(bytes).digest('hex'));
    const a = definition(bytes);
    const b = definition(bytes);
    await a.stage();
    await b.stage();
    expect(await a.run()).toBe('copied');
    await append({ type: 'FileDeleted', file_id: a.fileId, at: Date.now(), actor: 'ada' });

    let openGate!: () => void;
    const gate = new Promise<void>((r) => (openGate = r));
    let defineB: Promise<'copied' | 'present'> | null = null;
    hooks.before = async () => {
      // B claims and looks between A's check and A's removal: the bytes are there, it copies nothing.
      await new Promise<void>((looked) => {
        defineB = b.run(gate, looked);
      });
    };
    if (commitDuringCollection) {
      hooks.after = async () => {
        openGate();
        await defineB;
      };
    }
    startCollectorOfA();
    await waitFor('A to remove the blob', async () => (hooks.before === null ? true : undefined), 120_000, 20);
    await untilSwept();
    openGate();
    expect(await defineB!).toBe('present');
    await untilSwept(); // B's FileDefined is in the log: a collection after it still finds the bytes
    expect(await platform.blobs.size(blob)).toBe(bytes.length);
    expect(await leftovers()).toEqual([]);

    // Eventually removed: B's file deleted too, nothing references the bytes.
    await append({ type: 'FileDeleted', file_id: b.fileId, at: Date.now(), actor: 'ada' });
    await untilSwept();
    expect(await platform.blobs.size(blob)).toBeNull();
    expect(await leftovers()).toEqual([]);
    for (const c of collectors.splice(0)) c.stop();
  });

  it('crash leftovers: a claim whose definition committed and died is deleted; bytes a dead collection kept aside go back to a live file', async () => {
    const bytes = randomBytes(4096);
    const a = definition(bytes);
    await a.stage();
    await a.run();
    // A collection died after keeping a's bytes aside and removing the blob (a is live).
    const blob = blobKeyOf(a.sha256Hex);
    await platform.blobs.copy(blob, removalKeyOf(a.sha256Hex, 'dead-run'), bytes.length);
    await platform.blobs.remove(blob);
    // c's definition committed and died before releasing its claim; then c was deleted.
    const other = randomBytes(4096);
    const c = definition(other);
    await c.stage();
    await c.run();
    await platform.blobs.put(claimKeyOf(c.sha256Hex, c.fileId), Buffer.alloc(0));
    await append({ type: 'FileDeleted', file_id: c.fileId, at: Date.now(), actor: 'ada' });
    startCollectorOfA();
    await untilSwept();
    await waitFor('the leftovers handled', async () => ((await leftovers()).length === 0 ? true : undefined), 60_000, 50);
    expect(await platform.blobs.size(blob)).toBe(bytes.length);
    expect(await platform.blobs.size(blobKeyOf(c.sha256Hex))).toBeNull();
    for (const x of collectors.splice(0)) x.stop();
  });
});
