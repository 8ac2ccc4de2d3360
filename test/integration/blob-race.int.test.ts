import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobStore } from '../../apps/ingest/src/blob-store.ts';
import { BlobCollector } from '../../apps/ingest/src/files/blob-collector.ts';
import { claimKeyOf, promoteUnderClaim, removalKeyOf } from '../../apps/ingest/src/files/blobs.ts';
import { startFilesProjector } from '../../apps/ingest/src/read-models/files.ts';
import { startTasksProjector } from '../../apps/ingest/src/read-models/tasks.ts';
import type { RunningReadModelProjector } from '../../apps/ingest/src/read-models/projector.ts';
import { clickhouseFileReadModel, clickhouseFileReadModelWriter } from '@meridian/clickhouse';
import { blobKeyOf, fileDefinedFrom, type BlobReferences, type FileDefinitionRequested, type FileEvent, type TaskEvent } from '@meridian/domain';
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
 * the interleaving the "Blobs" section of docs/operating/state.md names is run deterministically, not hoped for.
 */
describe('blob collection against a definition on another worker (real Kafka, ClickHouse, MinIO)', () => {
  const settings = isolatedSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000' });
  const logger = createLogger({ name: 'blob-race-int', level: settings.LOG_LEVEL });
  const platform: Platform = createPlatform(settings, logger, 'blob-race-int');
  const codec = createEventCodec<FileEvent>();
  const claimRules = { claimTtlMs: settings.MERIDIAN_BLOB_CLAIM_TTL_MS, logger };
  const taskCodec = createEventCodec<TaskEvent>();
  let projector: RunningReadModelProjector | null = null;
  let tasksProjector: RunningReadModelProjector | null = null;
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
    const taskId = randomUUID();
    const staged = `staging/${fileId}`;
    const sha256 = createHash('sha256').update(bytes).digest();
    const command: FileDefinitionRequested = {
      type: 'FileDefinitionRequested',
      task_id: taskId,
      file_id: fileId,
      user_name: 'ada',
      at: Date.now(),
      file_name: `${fileId}.bin`,
      description: '',
      content_type: 'application/octet-stream',
      staged_object: staged,
      size: bytes.length,
      sha256,
      enforce_schema: false,
    };
    const event = fileDefinedFrom(command);
    return {
      fileId,
      taskId,
      command,
      sha256Hex: sha256.toString('hex'),
      async stage() {
        await platform.blobs.put(staged, bytes);
      },
      /** Claims, looks, then awaits `gate` before committing (appending its FileDefined). */
      run(gate: Promise<void> = Promise.resolve(), looked: () => void = () => undefined) {
        return promoteUnderClaim(
          platform.blobs,
          { sha256Hex: sha256.toString('hex'), taskId, stagedKey: staged, size: bytes.length },
          claimRules,
          async (committing) => {
            looked();
            await gate;
            committing();
            await append(event);
          },
        );
      },
      /** A run whose transaction is fenced before it commits (another worker runs the task): `during` runs after its look. */
      runFenced(during: () => Promise<void>) {
        return promoteUnderClaim(platform.blobs, { sha256Hex: sha256.toString('hex'), taskId, stagedKey: staged, size: bytes.length }, claimRules, async () => {
          await during();
          throw new Error('the producer is fenced: another worker runs this task');
        });
      },
    };
  }

  /**
   * A collector with the worker's own collaborators, on A's bucket (with its hooks) unless given
   * another; `references` defaults to the real ones, `removalLeaseMs` to the setting's.
   */
  function startCollector(options: { storage?: BlobStore; references?: BlobReferences; removalLeaseMs?: number } = {}): BlobCollector {
    const c = new BlobCollector({
      storage: options.storage ?? bucketOfA,
      references: options.references ?? platform.blobReferences,
      tasks: platform.taskReadModel,
      logEnds: () => platform.log.endOffsets(platform.topics.files),
      logger,
      waitMs: 60_000,
      intervalMs: 100,
      removalLeaseMs: options.removalLeaseMs ?? settings.MERIDIAN_BLOB_REMOVAL_LEASE_MS,
      claimTtlMs: settings.MERIDIAN_BLOB_CLAIM_TTL_MS,
    });
    collectors.push(c);
    c.start();
    return c;
  }
  const startCollectorOfA = () => startCollector();

  /** Until a collection has handled every deletion now in the files log. */
  async function untilSwept(): Promise<void> {
    const ends = await platform.log.endOffsets(platform.topics.files);
    await waitFor(
      "the collector to sweep to the log's end",
      async () => {
        const swept = await platform.blobReferences.swept();
        return [...ends].every(([p, end]) => end === 0 || (swept.get(p) ?? -1) >= end - 1) ? true : undefined;
      },
      120_000,
      50,
    );
  }

  const leftovers = async () => [...(await platform.blobs.list('_blob-claims/')), ...(await platform.blobs.list('_blob-removals/'))];

  beforeAll(async () => {
    await platform.prepare();
    projector = await startFilesProjector(
      platform,
      platform.options.filesReadModel,
      clickhouseFileReadModel(platform.clickhouseOptions),
      clickhouseFileReadModelWriter(platform.clickhouse),
    );
    tasksProjector = await startTasksProjector(platform, platform.options.tasksReadModel, platform.taskReadModel, platform.taskReadModelWriter);
  });
  afterAll(async () => {
    for (const c of collectors) await c.stop();
    await projector?.stop();
    await tasksProjector?.stop();
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
    for (const c of collectors.splice(0)) await c.stop();
  });

  // Finding 1 of the review: a second collection, whole, while the first has kept a blob's bytes
  // aside and not yet removed it; a definition claimed the blob just before and found it present.
  it("two collections at once: the second leaves the first one's kept bytes alone, and the first puts back the blob a definition claimed", async () => {
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
    let secondRan = false;
    hooks.before = async () => {
      await new Promise<void>((looked) => {
        defineB = b.run(gate, looked); // b claims and finds the bytes present
      });
      // Another worker's collection, whole, on the same bucket (no hooks), while A is between keeping the bytes aside and removing the blob.
      const second = startCollector({ storage: platform.blobs });
      await untilSwept();
      await second.stop();
      secondRan = true;
    };
    let firstDone!: () => void;
    const firstRecorded = new Promise<void>((r) => (firstDone = r));
    startCollector({
      references: {
        ...platform.blobReferences,
        recordSwept: async (positions) => {
          await platform.blobReferences.recordSwept(positions);
          firstDone();
        },
      },
    });
    await firstRecorded;
    expect(secondRan).toBe(true);
    expect(await platform.blobs.size(blob)).toBe(bytes.length); // A put the bytes back from its own kept copy
    openGate();
    expect(await defineB!).toBe('present');
    expect(await leftovers()).toEqual([]);
    for (const c of collectors.splice(0)) await c.stop();
    startCollectorOfA();
    await untilSwept(); // b's FileDefined counted: a later collection keeps its bytes
    expect(await platform.blobs.size(blob)).toBe(bytes.length);
    for (const c of collectors.splice(0)) await c.stop();
  });

  // Review 2, finding 1: worker W1 was kicked from the group while defining b, W2 reruns the task.
  // W1 is fenced after W2 claimed and found the bytes present; then A collects the blob (a's file
  // deleted) before W2 commits. W2's claim must still be there for A to see.
  it("two runs of one task: the fenced run releases only its own claim, so the other run's claim keeps the blob until it commits", async () => {
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
    let onW2: Promise<'copied' | 'present'> | null = null;
    await expect(
      b.runFenced(async () => {
        await new Promise<void>((looked) => {
          onW2 = b.run(gate, looked); // W2 claims and finds the bytes present
        });
      }),
    ).rejects.toThrow('fenced');
    startCollectorOfA();
    await untilSwept(); // A saw W2's claim before any removal, and left the blob in place
    expect(await platform.blobs.size(blob)).toBe(bytes.length);
    openGate();
    expect(await onW2!).toBe('present');
    await untilSwept();
    expect(await platform.blobs.size(blob)).toBe(bytes.length); // W2's file has its bytes
    for (const c of collectors.splice(0)) await c.stop();
  });

  it("crash leftovers: bytes a dead collection kept aside go back to a live file once past the lease; a failed definition's claim goes with its blob", async () => {
    const bytes = randomBytes(4096);
    const a = definition(bytes);
    await a.stage();
    await a.run();
    // A collection died after keeping a's bytes aside and removing the blob (a is live).
    const blob = blobKeyOf(a.sha256Hex);
    await platform.blobs.copy(blob, removalKeyOf(a.sha256Hex, 'dead-run'), bytes.length);
    await platform.blobs.remove(blob);
    // c's definition promoted its blob and failed; its claim stayed (the removal failed, or the worker died).
    const c = definition(randomBytes(4096));
    await c.stage();
    await platform.blobs.copy(c.command.staged_object, blobKeyOf(c.sha256Hex), c.command.size);
    await platform.blobs.put(claimKeyOf(c.sha256Hex, c.taskId, randomUUID()), Buffer.alloc(0));
    await appendEvents(await platform.log.writer(), taskCodec, platform.topics.tasks, c.taskId, [
      c.command,
      { type: 'TaskFailed', task_id: c.taskId, reason: 'the file could not be stored', rows_total: 0, rows_rejected: 0, errors: [], at: Date.now() },
    ]);
    await waitFor(
      'the tasks read model to show c failed',
      async () => ((await platform.taskReadModel.finishedAmong([c.taskId])).size === 1 ? true : undefined),
      60_000,
      50,
    );
    // A worker with a short lease, started once the kept bytes are older than it (the claim is younger than its TTL).
    const lease = 6000;
    await new Promise((r) => setTimeout(r, lease + 500));
    const collector = startCollector({ storage: platform.blobs, removalLeaseMs: lease });
    collector.enqueue(c.sha256Hex); // what the failed definition's giveUp did
    await waitFor('the leftovers handled', async () => ((await leftovers()).length === 0 ? true : undefined), 60_000, 50);
    expect(await platform.blobs.size(blob)).toBe(bytes.length);
    expect(await platform.blobs.size(blobKeyOf(c.sha256Hex))).toBeNull();
    for (const x of collectors.splice(0)) await x.stop();
  });
});
