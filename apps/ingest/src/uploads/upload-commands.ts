import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  batchKey,
  type ColumnBatch,
  decideUpload,
  decideWholeUpload,
  pointBatchOf,
  type DecidedUpload,
  readUpload,
  STAGE_HEADER,
  rowsRead,
  startUpload,
  type LogMessage,
  type LogWriter,
  type MetricsUploadRequested,
  type PointsFact,
  type TransactionalLog,
  type UploadComplete,
  type UploadFailed,
  type UploadSealed,
  type UploadStart,
  type UserRecord,
} from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { partitionFor, type Topics } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import { commandFailure } from '@meridian/retry';
import type { BlobStore } from '../blob-store.ts';
import { failedUnread, runCommand, taskFailed, type CommandHandler, type CommandPosition, type TaskLog } from '../commands/handlers.ts';
import { removeStaged } from '../staging.ts';
import type { PartitionCount } from './batch-sender.ts';
import { StageWriter, type UploadStage } from './stage-writer.ts';
import { UploadLimitExceeded, type UploadLimits } from './limits.ts';
import { openUploadTransaction } from './upload-transaction.ts';
import type { UploadRunOptions } from './options.ts';
import { gunzipIfNeeded, openUploadBytes } from './source.ts';

/** What the upload handler runs on: its options (options.ts) and the worker's parts it writes to and reads. */
export type UploadCommandsDeps = UploadRunOptions & {
  readonly topics: Topics;
  readonly storage: BlobStore;
  readonly logger: Logger;
  /** The tasks topic: the upload's progress and end, and its command's offset. */
  readonly tasks: TaskLog;
  readonly pointsCodec: EventCodec<PointsFact>;
  /** Non-transactional, for started/progress events that must show while the upload runs. */
  readonly progressProducer: LogWriter;
  /** Partitions of the points topic, as the broker has them. */
  readonly pointsPartitions: number;
  /** The accounts fold, read to its end before the upload was handed over (decideStart). */
  readonly user: (name: string) => UserRecord | undefined;
  /** Where large uploads' rows are written aside while they are parsed; null: staging off (MERIDIAN_UPLOAD_STAGING). */
  readonly stage: UploadStage | null;
  /** Whether a run of an upload of this many bytes may stage now (staging-gate.ts: large enough, and with auto while every points projector reads staged uploads). */
  readonly mayStage: (bytes: number) => Promise<boolean>;
};

/**
 * The handler of MetricsUploadRequested: runs the upload (runUpload, retried on storage
 * trouble), ends its task in the log, then removes its staged bytes.
 */
export function uploadCommands(deps: UploadCommandsDeps): CommandHandler<MetricsUploadRequested> {
  const { logger, tasks } = deps;
  const rule = { attempts: deps.attempts, logger, what: 'the upload could not be processed' };
  /**
   * The task has ended in the log (its points or its failure): the claim check is spent. The
   * removal runs beside the partition's next command, which waits for it at its own end: off
   * the commands' path, and at most one removal per tasks partition under way. One a stop cuts
   * short is left to the staging expiry rule, as any failed removal is.
   */
  const removals = new Map<number, Promise<void>>();
  const ended = async (cmd: MetricsUploadRequested, partition: number) => {
    const previous = removals.get(partition);
    const removal = cmd.staged_object === null ? Promise.resolve() : removeStaged(deps.storage, cmd.staged_object, logger);
    removals.set(partition, removal);
    await previous;
  };
  return {
    /** Storage trouble is retried here, within the run; Kafka's passes up, and the consumer redelivers the command. */
    async run(cmd, run) {
      await runCommand(cmd.task_id, run, tasks, rule, () => runUpload(cmd, run.at, run.producer, deps, run.heartbeat));
      await ended(cmd, run.at.partition);
    },
    groups: groupable,
    /** Small uploads of one tasks partition in one transaction (runUploadGroup). */
    async runGroup(items) {
      const done = await runUploadGroup(
        items.map(({ cmd, run }) => ({ cmd, at: run.at })),
        items[0]!.run.producer,
        deps,
      );
      if (done) for (const { cmd, run } of items) await ended(cmd, run.at.partition);
      return done;
    },
    async refuse(cmd, { at, producer }, reason) {
      await tasks.fail(producer, at, cmd.task_id, failedUnread(reason));
      await ended(cmd, at.partition);
      // A command refused after its runs died (the crash-loop breaker) leaves their stages: no run will drop them now.
      await deps.stage
        ?.drop(cmd.task_id)
        .catch((error: unknown) => logger.warn({ err: error, task_id: cmd.task_id }, 'dropping the stages of a refused upload failed; the sweeper will'));
    },
  };
}

const PROGRESS_EVERY_MS = 1000;

/** The largest upload a group takes (JSON bodies of this size or less: parsed whole in memory, bounded by MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD). */
const GROUPED_UPLOAD_MAX_BYTES = 1024 * 1024;

/** Whether an upload may share a transaction with its neighbours (runUploadGroup). */
function groupable(cmd: MetricsUploadRequested): boolean {
  return cmd.source === 'json_body' && cmd.payload_bytes <= GROUPED_UPLOAD_MAX_BYTES;
}

/**
 * An upload's time budget (MERIDIAN_UPLOAD_TIME_BUDGET_MS): check() throws past it between
 * chunks, and a read that stalls is ended from outside (its source destroyed with the error).
 */
function timeBudget(limits: UploadLimits, source: () => Readable | null): { check(): void; end(): void } {
  const deadline = Date.now() + limits.timeBudgetMs;
  const exceeded = () =>
    new UploadLimitExceeded(`the upload took longer than its time budget of ${limits.timeBudgetMs} ms (MERIDIAN_UPLOAD_TIME_BUDGET_MS); nothing was stored`);
  const timer = setTimeout(() => source()?.destroy(exceeded()), limits.timeBudgetMs);
  return {
    check() {
      if (Date.now() > deadline) throw exceeded();
    },
    end: () => clearTimeout(timer),
  };
}

function parseOptionsOf(cmd: MetricsUploadRequested, limits: UploadLimits) {
  return {
    ...(cmd.metric_name !== null ? { metricName: cmd.metric_name } : {}),
    // The decider counts and caps the errors: the parser hands over every one.
    maxErrors: Number.MAX_SAFE_INTEGER,
    maxLineLength: limits.maxLineLength,
    maxColumns: limits.maxColumns,
    maxJsonDocumentLength: limits.maxJsonDocumentLength,
  };
}

/** How an upload's run starts: its batches hold the metrics of one points partition each. */
const uploadStart = (cmd: MetricsUploadRequested, deps: UploadCommandsDeps): UploadStart => ({
  on_error: cmd.on_error,
  user: () => deps.user(cmd.user_name),
  batch: deps.batch,
  maxBufferedPoints: deps.maxBufferedPoints,
  groupOf: (name) => partitionFor(name, deps.pointsPartitions),
});

const senderOptions = (deps: UploadCommandsDeps) => ({
  topic: deps.topics.points,
  partitions: deps.pointsPartitions,
  maxBytesPerPartition: deps.sendBytesPerPartition,
  maxBytesPerRequest: deps.sendBytesPerRequest,
});

/**
 * Runs one upload inside one Kafka transaction: its point batches, a seal in every points
 * partition it touched, the UploadParsed task event and the command's consumer offset
 * commit together or not at all. A crash anywhere aborts the transaction (the next
 * producer with the same transactional id fences it) and the command is processed again,
 * so every accepted point reaches the log exactly once; an invalid upload aborts it, so
 * none of its points is ever visible. An upload past one of its limits (decompressed size,
 * expansion ratio, JSON document size, time budget) is aborted the same way and its task
 * failed at once: an UploadLimitExceeded is final, never retried.
 *
 * This is the upload's I/O shell: it reads and parses the bytes and acts on what the upload
 * decider (decideUpload, libs/domain/src/uploads) makes of them, which holds the rules (all or
 * nothing, the error cap, skip mode, write access per row). The committed batches reach
 * ClickHouse through the projector (apps/ingest/src/projector/projector.ts).
 *
 * Stays one function: one transaction's steps in order (the command's offset joined, the body read and sent,
 * the seals and UploadParsed, the commit), and its catch undoes exactly those; split, that order would be
 * scattered.
 */
async function runUpload(
  cmd: MetricsUploadRequested,
  at: CommandPosition,
  producer: TransactionalLog,
  deps: UploadCommandsDeps,
  heartbeat: () => Promise<void>,
): Promise<'succeeded' | 'failed'> {
  const log = deps.logger.child({ task_id: cmd.task_id });
  const now = () => Date.now();
  const run = startUpload(uploadStart(cmd, deps));
  // Staged when staging is on and the upload's first batch comes before the
  // end of its input (it did not fit the decider's buffer): its rows are then written aside into
  // stages while it is parsed, and the projector attaches them at its seals. Small uploads stay
  // direct (no DDL for them). Decided once per run: all of a run's batches are staged or none.
  let staging = (deps.stage === null ? null : undefined) as StageWriter | null | undefined;
  // The command's offset joins the transaction while the body is being opened (upload-transaction.ts).
  const tx = await openUploadTransaction(producer, deps.tasks, at, { ...senderOptions(deps), placed: (segments) => staging?.add(segments) });
  const { sender } = tx;
  let lastProgress = now();
  const { limits } = deps;
  let source: Readable | null = null;
  const budget = timeBudget(limits, () => source);

  /** Sends a decided batch in the transaction (the first one decides whether the run is staged). */
  const send = async (b: ColumnBatch, inputEnded: boolean): Promise<void> => {
    if (staging === undefined)
      staging =
        inputEnded || deps.stage === null || !(await deps.mayStage(cmd.payload_bytes))
          ? null
          : new StageWriter(
              deps.stage,
              {
                taskId: cmd.task_id,
                attempt: randomBytes(8).toString('hex'),
                batchRows: deps.stageBatchRows,
                finishTimeoutMs: deps.stageFinishTimeoutMs,
                heartbeat,
              },
              log,
            );
    const batch = pointBatchOf(cmd.task_id, cmd.at, b, staging?.attempt);
    const value = deps.pointsCodec.encode(batch);
    await sender.send(batchKey(b), value, b.timestamps.length, staging === null ? undefined : { batch, headers: { [STAGE_HEADER]: staging.attempt } });
    // At ClickHouse's pace while the stages fall behind: a stage given up costs a refill at its seal.
    await staging?.room();
  };

  try {
    source = await openUploadBytes(cmd, deps.storage);
    await tx.offsetJoined;
    const end = await readUpload(gunzipIfNeeded(source, limits), run, parseOptionsOf(cmd, limits), {
      before: () => budget.check(),
      batch: send,
      after: async () => {
        if (now() - lastProgress < PROGRESS_EVERY_MS) return;
        lastProgress = now();
        await deps.tasks.send(deps.progressProducer, [{ type: 'TaskProgress', task_id: cmd.task_id, rows_done: rowsRead(run), at: lastProgress }]);
        await heartbeat();
      },
    });

    if (end.type === 'UploadFailed') {
      await tx.abort();
      await staging?.abandon();
      await deps.tasks.fail(producer, at, cmd.task_id, end);
      log.info({ rows: end.rows_total, rejected: end.rows_rejected }, 'upload rejected');
      return 'failed';
    }

    if (staging) {
      // A staged seal names its share's first offset: known once its batches are acknowledged.
      await sender.flush();
      // The stages as complete as they will be (within MERIDIAN_STAGE_FINISH_TIMEOUT_MS); a broken one is refilled from the log at its seal.
      await staging.finish();
    }
    budget.check();
    const { counts, shares } = sender;
    const attempt = staging?.attempt;
    // A staged seal names its share.
    const { seals, parsed } = uploadEnd(
      cmd,
      end,
      counts,
      deps,
      attempt === undefined ? undefined : (partition, batches) => ({ attempt, first_offset: shares.get(partition)!.firstOffset, batches }),
    );
    // The last point batches, the seals (after them in each partition) and UploadParsed in one request.
    await tx.finish([
      { topic: deps.topics.points, acks: -1, messages: seals },
      { topic: deps.topics.tasks, acks: -1, messages: [parsed] },
    ]);
    // Where each partition's batches sit: [first, last] offsets, to find them in the log.
    const offsets = Object.fromEntries([...shares].map(([partition, s]) => [partition, { batches: s.batches, first: s.firstOffset, last: s.lastOffset }]));
    log.info(
      {
        points: end.points_accepted,
        rejected: end.rows_rejected,
        partitions: shares.size,
        offsets,
        ...(attempt === undefined ? {} : { staged: attempt, broken_stages: [...staging!.brokenPartitions] }),
      },
      'upload written to the log',
    );
    return 'succeeded';
  } catch (error) {
    await tx.undo();
    await staging?.abandon();
    if (!(error instanceof UploadLimitExceeded)) throw error;
    const [failed] = decideUpload(run, { type: 'LimitReached', reason: error.message }) as [UploadFailed];
    await deps.tasks.fail(producer, at, cmd.task_id, failed);
    log.info({ rows: failed.rows_total, reason: error.message }, 'upload stopped at a limit');
    return 'failed';
  } finally {
    budget.end();
  }
}

/**
 * An upload's end in the log: a seal per points partition it wrote (sent after its batches there;
 * `stage` names a staged share) and its UploadParsed.
 */
function uploadEnd(
  cmd: MetricsUploadRequested,
  end: UploadComplete,
  written: ReadonlyMap<number, PartitionCount>,
  deps: UploadCommandsDeps,
  stage?: (partition: number, batches: number) => NonNullable<UploadSealed['stage']>,
): { seals: LogMessage[]; parsed: LogMessage } {
  const seals = [...written].map(([partition, { points, batches }]) => ({
    partition,
    key: cmd.task_id,
    value: deps.pointsCodec.encode({
      type: 'UploadSealed',
      task_id: cmd.task_id,
      points,
      ...(stage === undefined ? {} : { stage: stage(partition, batches) }),
    }),
  }));
  const parsed = deps.tasks.message({
    type: 'UploadParsed',
    task_id: cmd.task_id,
    rows_total: end.rows_total,
    points_accepted: end.points_accepted,
    rows_rejected: end.rows_rejected,
    errors: end.errors,
    partitions: [...written.keys()].sort((a, b) => a - b),
    metrics: end.metrics,
    at: Date.now(),
  });
  return { seals, parsed };
}

/** Reads and decides a small upload to its end before anything of it is sent; past a limit it fails, as a large one does. */
async function parseWhole(cmd: MetricsUploadRequested, deps: UploadCommandsDeps): Promise<DecidedUpload> {
  let source: Readable | null = null;
  const budget = timeBudget(deps.limits, () => source);
  try {
    source = await openUploadBytes(cmd, deps.storage);
    return await decideWholeUpload(gunzipIfNeeded(source, deps.limits), uploadStart(cmd, deps), parseOptionsOf(cmd, deps.limits), {
      between: () => budget.check(),
      limitReason: (error) => (error instanceof UploadLimitExceeded ? error.message : null),
    });
  } finally {
    budget.end();
    source?.destroy();
  }
}

/**
 * Runs several small uploads, consecutive commands of one tasks partition, in ONE transaction:
 * a small upload's cost is mostly its round trips (the transaction's requests, the
 * body from storage), not its rows, and here they are paid once for the group. Each upload is
 * parsed whole first, so all or nothing still holds for each: one that fails writes its
 * TaskFailed and none of its batches, and the others' batches, their seals (a seal per upload
 * and points partition, after the group's batches), their UploadParsed and the last command's
 * offset commit together. Kafka's trouble is thrown (the consumer runs the commands again); on
 * any other trouble before the commit the transaction is aborted and false returned, and the
 * caller runs each upload alone under the one rule for failures.
 */
async function runUploadGroup(
  items: ReadonlyArray<{ readonly cmd: MetricsUploadRequested; readonly at: CommandPosition }>,
  producer: TransactionalLog,
  deps: UploadCommandsDeps,
): Promise<boolean> {
  // The group's transaction is opened as one upload's is, and commits the last command's offset.
  const tx = await openUploadTransaction(producer, deps.tasks, items[items.length - 1]!.at, senderOptions(deps));
  const { sender } = tx;
  try {
    const parsed = await Promise.all(items.map(({ cmd }) => parseWhole(cmd, deps)));
    await tx.offsetJoined;
    const seals: LogMessage[] = [];
    const events: LogMessage[] = [];
    for (const [i, { cmd }] of items.entries()) {
      const { end, batches } = parsed[i]!;
      if (end.type === 'UploadFailed') {
        events.push(deps.tasks.message(taskFailed(cmd.task_id, end)));
        continue;
      }
      const before = new Map([...sender.counts].map(([partition, count]) => [partition, { ...count }]));
      for (const b of batches) await sender.send(batchKey(b), deps.pointsCodec.encode(pointBatchOf(cmd.task_id, cmd.at, b)), b.timestamps.length);
      // What this upload added to each partition the sender counts.
      const written = new Map(
        [...sender.counts]
          .map(([partition, count]): [number, PartitionCount] => [
            partition,
            { points: count.points - (before.get(partition)?.points ?? 0), batches: count.batches - (before.get(partition)?.batches ?? 0) },
          ])
          .filter(([, count]) => count.batches > 0),
      );
      const ended = uploadEnd(cmd, end, written, deps);
      seals.push(...ended.seals);
      events.push(ended.parsed);
    }
    await tx.finish([
      { topic: deps.topics.points, acks: -1, messages: seals },
      { topic: deps.topics.tasks, acks: -1, messages: events },
    ]);
    deps.logger.info(
      {
        tasks: items.map(({ cmd }, i) => {
          const { end } = parsed[i]!;
          return end.type === 'UploadComplete' ? { task_id: cmd.task_id, points: end.points_accepted } : { task_id: cmd.task_id, failed: end.reason };
        }),
      },
      'uploads written to the log in one transaction',
    );
    return true;
  } catch (error) {
    await tx.undo();
    // A commit that failed may have landed: the consumer reads the tasks log again before any rerun.
    if (tx.committing || commandFailure(error) === 'redeliver') throw error;
    deps.logger.warn({ err: error, tasks: items.map(({ cmd }) => cmd.task_id) }, 'a group of uploads met trouble; each runs alone');
    return false;
  }
}
