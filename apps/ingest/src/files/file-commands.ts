import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { checkSchema, fileDefinedFrom, type FileDefinitionRequested, type FileEvent, type RowError, type SchemaLimits } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { eventMessage } from '@meridian/kafka';
import { isNotFound } from '@meridian/storage';
import { failedUnread, inTransaction, runCommand, type CommandHandler, type CommandRun, type TaskLog } from '../commands/handlers.ts';
import { removeStaged } from '../staging.ts';
import type { IngestDeps } from '../ingest-deps.ts';
import type { FileCommandsOptions } from './options.ts';
import { BlobCollector } from './blob-collector.ts';
import { promoteUnderClaim, releaseClaimsOfTask } from './blobs.ts';

/**
 * The handler of FileDefinitionRequested. Its refusal also removes a blob a dead run may have
 * promoted; stop() ends the blob collector beside it.
 */
export type FileCommands = CommandHandler<FileDefinitionRequested> & { stop(): Promise<void> };

type Verdict = { ok: true } | { ok: false; reason: string; errors: RowError[] };

/** One pass over the staged bytes: they must be what the api hashed, and fit the schema when asked. */
async function inspect(storage: IngestDeps['blobs'], schemaLimits: SchemaLimits, cmd: FileDefinitionRequested): Promise<Verdict> {
  let stream: Readable;
  try {
    stream = await storage.open(cmd.staged_object);
  } catch (error) {
    if (isNotFound(error)) return { ok: false, reason: 'the uploaded bytes are no longer in storage; upload the file again', errors: [] };
    throw error;
  }
  const hash = createHash('sha256');
  let size = 0;
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      hash.update(chunk);
      yield chunk;
    }
  }
  try {
    if (cmd.enforce_schema) {
      const verdict = await checkSchema(counted(), schemaLimits);
      if (!verdict.ok) {
        const what = verdict.format === null ? 'CSV, JSON or NDJSON' : verdict.format.toUpperCase();
        return {
          ok: false,
          reason: `the file is not well-formed ${what}: line ${verdict.line}: ${verdict.reason}`,
          errors: [{ row: verdict.line, column: verdict.format ?? 'file', reason: verdict.reason }],
        };
      }
    } else {
      for await (const _ of counted()) {
        // read to the end: the size and hash are checked below
      }
    }
  } finally {
    stream.destroy();
  }
  if (size !== cmd.size || !hash.digest().equals(cmd.sha256)) {
    return { ok: false, reason: 'the stored bytes differ from the upload (size or SHA-256); upload the file again', errors: [] };
  }
  return { ok: true };
}

const HEARTBEAT_MS = 2000;

/**
 * The file side of the command consumer. A definition is checked (size and SHA-256 against
 * the command, and with enforce_schema the CSV / JSON / NDJSON rules), its bytes promoted to
 * their content-addressed key, and then FileDefined (files topic), the task's success and the
 * command's offset commit go in one Kafka transaction; the staged object is removed after.
 * A crash before the commit reruns the whole definition (the promotion is idempotent); a
 * crash after it leaves at most the staged object behind.
 *
 * Blobs are removed here too (./blob-collector.ts), once no live file references them (after a
 * FileDeleted). Collectors run on every worker and share no lock with this one, so a definition
 * claims its blob (an object beside it) before it looks whether the bytes are there, and releases
 * the claim once its FileDefined is committed. A collector that removes the blob after the look
 * then sees the claim or the FileDefined and puts the bytes back; one that removed it before the
 * look leaves nothing to find, and the definition copies its own staged bytes.
 */
export async function startFileCommands(ingest: IngestDeps, options: FileCommandsOptions, tasks: TaskLog): Promise<FileCommands> {
  const { blobs: storage, topics, logger: rootLogger } = ingest;
  const logger = rootLogger.child({ component: 'files' });
  const fileCodec = createEventCodec<FileEvent>();
  const collector = new BlobCollector({
    storage,
    references: ingest.blobReferences,
    tasks: ingest.taskReadModel,
    logEnds: () => ingest.log.endOffsets(topics.files),
    logger,
    waitMs: options.readModelWaitMs,
    intervalMs: options.sweepIntervalMs,
    removalLeaseMs: options.removalLeaseMs,
    claimTtlMs: options.claimTtlMs,
  });
  const claimRules = { claimTtlMs: options.claimTtlMs, logger };
  collector.start();
  const { schemaLimits } = options;

  const rule = { attempts: options.attempts, logger, what: 'the file could not be stored' };

  const removeStagedOf = (cmd: FileDefinitionRequested) => removeStaged(storage, cmd.staged_object, logger);
  // Every run's claim: by then the task has failed, and its other runs are fenced.
  const releaseClaimsOf = (cmd: FileDefinitionRequested) => releaseClaimsOfTask(storage, cmd.sha256.toString('hex'), cmd.task_id, logger);

  /** One run of a definition, safe to repeat: a crash or a retry before the commit runs it whole again (the promotion is idempotent). */
  async function define(cmd: FileDefinitionRequested, { at, producer }: CommandRun): Promise<void> {
    const log = logger.child({ task_id: cmd.task_id, file_id: cmd.file_id });
    const verdict = await inspect(storage, schemaLimits, cmd);
    if (!verdict.ok) {
      await tasks.fail(producer, at, cmd.task_id, { ...failedUnread(verdict.reason), errors: verdict.errors });
      await removeStagedOf(cmd);
      log.info({ reason: verdict.reason }, 'file definition rejected');
      return;
    }
    const defined = fileDefinedFrom(cmd);
    const target = { sha256Hex: cmd.sha256.toString('hex'), taskId: cmd.task_id, stagedKey: cmd.staged_object, size: cmd.size };
    const how = await promoteUnderClaim(storage, target, claimRules, (committing) =>
      inTransaction(producer, async (tx) => {
        await tx.send({ topic: topics.files, acks: -1, messages: [eventMessage(fileCodec, cmd.file_id, defined)] });
        await tasks.send(tx, [
          { type: 'FileDefinitionSucceeded', task_id: cmd.task_id, file_id: cmd.file_id, size: cmd.size, sha256: cmd.sha256, at: Date.now() },
        ]);
        await tasks.commitCommand(tx, at);
        committing(); // throws when the claim is too old: the transaction aborts, the run claims again
      }),
    );
    log.info({ size: cmd.size, blob: how }, 'file defined');
    await removeStagedOf(cmd);
  }

  return {
    async run(cmd, run) {
      // Reading and copying a large file takes longer than a session timeout: keep the membership alive.
      const beat = setInterval(() => void run.heartbeat().catch(() => undefined), HEARTBEAT_MS);
      try {
        await runCommand(
          cmd.task_id,
          run,
          tasks,
          rule,
          () => define(cmd, run),
          async () => {
            await releaseClaimsOf(cmd); // best effort: a claim left behind goes once a collector sees the task failed
            await removeStagedOf(cmd);
            collector.enqueue(cmd.sha256.toString('hex')); // a promoted blob nothing references
          },
        );
      } finally {
        clearInterval(beat);
      }
    },
    async refuse(cmd, { at, producer }, reason) {
      // The task's failure first: it is what a redelivery must not write twice. Then, best effort, a
      // dead run's claims (its transaction never committed, or the command would not be here).
      await tasks.fail(producer, at, cmd.task_id, failedUnread(reason));
      await releaseClaimsOf(cmd);
      await removeStagedOf(cmd);
      collector.enqueue(cmd.sha256.toString('hex')); // a run that died after promoting left a blob nothing references
    },
    async stop() {
      await collector.stop(); // a collection under way puts back what it removed first
    },
  };
}
