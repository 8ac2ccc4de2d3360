import { READS_STAGED_UPLOADS, type BatchPayload, type ConsumedMessage, type PointsFact, type TaskEvent } from '@meridian/domain';
import { createEventCodec, UndecodableEventError } from '@meridian/events';
import { appendEvents, type ConsumerWatch } from '@meridian/kafka';
import { runConsumer } from '@meridian/platform';
import { retry, RETRY_POLICIES } from '@meridian/retry';
import { announceProjected } from './announce.ts';
import { sendToDeadLetter } from '../dead-letter.ts';
import { Stopping } from '../persist.ts';
import { Heart } from './heart.ts';
import { InsertLog } from './insert-log.ts';
import { refusedBeforeWriting, type BatchPosition } from '@meridian/clickhouse';
import { Projection, refillStage, stageHeader, type Deletion, type Seal, type StagedSeal } from '@meridian/projection';
import { randomBytes } from 'node:crypto';
import { startStageSweeper } from './stage-sweeper.ts';
import type { IngestDeps } from '../ingest-deps.ts';

/** owns: whether this member projects a points partition now (the retention runner leads where partition 0 is). */
export type RunningProjector = { readonly watch: ConsumerWatch; owns(partition: number): boolean; stop(): Promise<void> };

/** Rows waiting longer than this are written at the end of the batch even without a seal. */
const LINGER_MS = 1000;
/** Large fetches make large inserts when catching up (a 50k-point batch is about 0.7 MB). */
const MAX_BYTES_PER_PARTITION = 8 * 1024 * 1024;
const MAX_BYTES = 24 * 1024 * 1024;

/**
 * Projects the points topic into ClickHouse, exactly once, without transactions.
 *
 * - Every row stores the (partition, offset) of its PointBatch. The sink is the authority:
 *   on every assignment the projector reads max(kafka_offset) per partition from `points`
 *   and skips the batches at or below it, whatever the committed Kafka offsets say.
 * - Rows are buffered across messages and written as ONE insert of at most
 *   MERIDIAN_PROJECTOR_BATCH_ROWS rows, one Native block, which ClickHouse writes as one part:
 *   after a crash the whole insert is there or none of it. A PointBatch is never split.
 * - An UploadSealed marker is announced (UploadSegmentProjected on the tasks topic) only once
 *   every row before it is in ClickHouse; markers of one fetched batch share one insert.
 * - A staged upload's batches (known by their meridian-stage header, not decoded)
 *   are not buffered: its rows were written aside into a stage while it was parsed, and its
 *   seal moves them in (PointsStages.seal: the stage checked, or refilled from the log, then
 *   attached; the seal recorded in points_seals, which the position counts), after the rows
 *   buffered before it are flushed, and is then announced like any seal.
 * - A deletion's marker (PointsDeleted) is applied where it stands in its partition: the rows
 *   buffered before it are flushed, the rows of its metrics and range below its offset leave
 *   points and the catalog (libs/clickhouse's applyDeletion), its offset is recorded in the seals
 *   table, which the position counts, and it is announced like a seal.
 * - A message that cannot be decoded or projected goes to the dead-letter topic and is skipped.
 * - Kafka offsets are committed only when everything before them is done (rows inserted,
 *   markers announced); they save re-reading, never decide what is written.
 */
export async function startProjector(ingest: IngestDeps): Promise<RunningProjector> {
  const { log, topics, settings } = ingest;
  const logger = ingest.logger.child({ component: 'projector' });
  const groupId = ingest.groups.projector;
  const sink = ingest.pointsSink;
  const stages = ingest.pointsStages;
  const pointsCodec = createEventCodec<PointsFact>();
  const taskCodec = createEventCodec<TaskEvent>();
  const producer = await log.writer();
  const projection = new Projection(settings.MERIDIAN_PROJECTOR_BATCH_ROWS);
  const inserts = new InsertLog(logger);
  let assigned: number[] = [];

  const consumer = log.consumer({
    groupId,
    sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS,
    heartbeatIntervalMs: Math.min(3000, Math.floor(settings.KAFKA_SESSION_TIMEOUT_MS / 3)),
    maxBytesPerPartition: MAX_BYTES_PER_PARTITION,
    maxBytes: MAX_BYTES,
    maxWaitTimeMs: 500,
    readUncommitted: false, // only committed upload transactions are projected
    advertise: [READS_STAGED_UPLOADS],
  });
  consumer.onJoin((e) => {
    // kafkajs resumes every assigned partition from its committed offset after a join, so the
    // buffer (taken from positions past that) is void; the sink positions are read again.
    projection.reset();
    assigned = [...(e.assignment[topics.points] ?? [])].sort((a, b) => a - b);
    logger.info({ group: e.groupId, partitions: assigned }, 'projector joined its consumer group');
  });
  consumer.onCrash((e) => {
    logger.error({ err: e.error, restart: e.restart }, 'projector consumer crashed');
  });
  const watch: ConsumerWatch = consumer.watch('projector');

  type Ctx = Pick<BatchPayload, 'isRunning' | 'commitOffsetsIfNecessary' | 'uncommittedOffsets'> & { heart: Heart };

  /**
   * Throws once the partitions may no longer be ours: the consumer is stopping, or a heartbeat
   * failed (a rebalance; the new owner may already have read the sink positions).
   */
  function stillOwned(ctx: Ctx, what: string): void {
    if (!ctx.isRunning()) throw new Stopping(`${what}: stopping`);
    ctx.heart.check();
  }

  /** Runs `attempt` until it succeeds, heartbeating, backing off; stops only when the consumer stops. */
  async function persist(what: string, ctx: Ctx, attempt: (retry: boolean) => Promise<void>): Promise<void> {
    await retry((n) => ctx.heart.during(attempt(n > 1)), {
      ...RETRY_POLICIES.projector,
      // Every failure is retried while the partitions are ours; a stopping consumer leaves the work to the next owner.
      retriable: () => {
        stillOwned(ctx, what);
        return true;
      },
      onRetry: (error, n, delay) => logger.warn({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
      wait: (ms) => ctx.heart.during(new Promise((r) => setTimeout(r, ms))),
    });
  }

  /**
   * Reads where the sink is. The last insert of a previous owner may have stored its points
   * without the catalog's share and that owner died before repairing it (flush): the batch at
   * each partition's position is checked, as after an unknown outcome here (0 points almost always).
   */
  async function loadSinkPositions(partitions: readonly number[], ctx: Ctx): Promise<void> {
    let max = new Map<number, number>();
    await persist('reading the sink positions', ctx, async () => {
      await sink.settle();
      max = await sink.maxOffsets(partitions);
      for (const [p, o] of max) projection.setSinkMax(p, o);
      logger.info({ sink_max_offsets: Object.fromEntries(max) }, 'projector resumes after the sink positions');
    });
    await repairCatalog(
      [...max].filter(([, o]) => o >= 0).map(([partition, offset]) => ({ partition, offset })),
      ctx,
    );
  }

  /** Adds to the metric catalog what it lacks of the metrics of these stored batches. */
  async function repairCatalog(batches: readonly BatchPosition[], ctx: Ctx): Promise<void> {
    if (batches.length === 0) return;
    await persist('repairing the metric catalog', ctx, async () => {
      const added = await sink.repairCatalog(batches);
      if (added > 0) logger.warn({ points: added }, 'metric catalog was short of an insert whose server or writer died; added');
    });
  }

  /** Writes the buffered rows (one insert), announces the pending seals, commits what is done. */
  async function flush(ctx: Ctx): Promise<void> {
    const { rows } = projection.pending();
    if (rows > 0) {
      const started = performance.now();
      let unknownOutcome = false;
      const inThisInsert = projection.pending().segments; // before a retry drops the ones found stored
      await persist('insert into points', ctx, async (retry) => {
        if (retry) {
          // The failed insert may have landed (all of it) or not (none of it): ask the sink.
          await sink.settle();
          const partitions = [...new Set(projection.pending().segments.map((s) => s.partition))];
          for (const [p, o] of await sink.maxOffsets(partitions)) projection.setSinkMax(p, o);
          projection.dropStored();
        }
        const todo = projection.pending().segments;
        if (todo.length === 0) return;
        try {
          await sink.insert(todo);
        } catch (error) {
          if (!refusedBeforeWriting(error)) unknownOutcome = true;
          throw error;
        }
        projection.stored(todo);
      });
      // The failed attempt may have stored the points and not the catalog's share (sink.ts).
      if (unknownOutcome) await repairCatalog(inThisInsert, ctx);
      inserts.record(rows, performance.now() - started);
    }
    const { seals } = projection.pending();
    if (seals.length > 0) {
      await persist('announcing projected segments', ctx, () => announceProjected(producer, taskCodec, topics.tasks, seals));
    }
    projection.clearBuffer();
    ctx.heart.check();
    await commitDone(ctx);
  }

  /** Commits the consumed positions; only called when nothing taken is still pending. */
  async function commitDone(ctx: Ctx): Promise<void> {
    if (!projection.isEmpty) return;
    const offsets = ctx.uncommittedOffsets();
    if (offsets.topics.length === 0) return;
    await ctx.commitOffsetsIfNecessary(offsets);
  }

  async function reject(ctx: Ctx, partition: number, message: ConsumedMessage, reason: string): Promise<void> {
    logger.warn({ partition, offset: message.offset, reason }, 'points message sent to the dead-letter topic');
    await persist('dead-lettering a points message', ctx, () =>
      sendToDeadLetter(producer, topics.deadLetter, {
        topic: topics.points,
        partition,
        offset: Number(message.offset),
        key: message.key,
        value: message.value,
        reason,
      }),
    );
  }

  /**
   * A point batch that cannot be projected fails its upload's task, so the task never reports
   * success with points missing. Its other batches may be stored already: the reason says so.
   */
  async function failUpload(ctx: Ctx, partition: number, offset: number, taskId: string, reason: string): Promise<void> {
    const failed: TaskEvent = {
      type: 'TaskFailed',
      task_id: taskId,
      reason: `a point batch of this upload (points partition ${partition}, offset ${offset}) could not be stored: ${reason}; it is in the dead-letter topic, and the upload's other batches may be stored`,
      rows_total: 0,
      rows_rejected: 0,
      errors: [],
      at: Date.now(),
    };
    await persist('failing the task of a rejected point batch', ctx, async () => {
      await appendEvents(producer, taskCodec, topics.tasks, taskId, [failed]);
    });
  }

  /** Moves a staged share into points (the buffered rows before it are flushed), then it counts in the position. */
  async function sealStaged(ctx: Ctx, seal: StagedSeal): Promise<void> {
    const started = performance.now();
    const share = {
      partition: seal.partition,
      sealOffset: seal.offset,
      taskId: seal.task_id,
      attempt: seal.attempt,
      points: seal.points,
      batches: seal.batches,
    };
    const refill = {
      // A share's batches may be older than the brokers' window: read as archive plus brokers.
      log: ingest.archive.history,
      codec: pointsCodec,
      topic: topics.points,
      groupId: `${groupId}-refill-${randomBytes(4).toString('hex')}`,
      batchRows: settings.MERIDIAN_PROJECTOR_BATCH_ROWS,
      bad: async (message: ConsumedMessage, taskId: string, reason: string) => {
        await reject(ctx, seal.partition, message, reason);
        await failUpload(ctx, seal.partition, Number(message.offset), taskId, reason);
      },
    };
    await persist('sealing a staged upload', ctx, async () => {
      // A seal is several queries, some long (a refill, waits for inserts): each write of it is
      // fenced, so one that outlasted this member's ownership cannot attach the share a second time.
      const outcome = await stages.seal(
        share,
        (stage) => refillStage(refill, seal, stage),
        () => stillOwned(ctx, 'sealing a staged upload'),
      );
      logger.info(
        {
          task_id: seal.task_id,
          partition: seal.partition,
          offset: seal.offset,
          points: seal.points,
          how: outcome.how,
          refilled: outcome.refilled,
          moved: outcome.points,
          ms: Math.round(performance.now() - started),
        },
        'staged upload sealed into points',
      );
    });
    projection.sealed(seal);
  }

  /** Applies a deletion's marker (the buffered rows before it are flushed), then it counts in the position. */
  async function applyDeletion(ctx: Ctx, deletion: Deletion): Promise<void> {
    const started = performance.now();
    const { task_id: taskId, partition, offset, metrics, fromMs, toMs } = deletion;
    await persist('deleting points', ctx, () => ingest.deletePoints({ taskId, partition, offset, metrics, fromMs, toMs }));
    projection.deleted(deletion);
    logger.info(
      { task_id: taskId, partition, offset, metrics: metrics.length, from_ms: fromMs, to_ms: toMs, ms: Math.round(performance.now() - started) },
      'points deleted',
    );
  }

  /** Best effort: a stage left by a crash after its seal was recorded (the sweeper drops it otherwise). */
  async function dropSealedStage(seal: Seal, attempt: string): Promise<void> {
    await stages
      .dropSealed(seal.task_id, attempt, seal.partition)
      .catch((error: unknown) =>
        logger.warn({ err: error, task_id: seal.task_id, partition: seal.partition }, 'dropping the stage of a recorded seal failed; the sweeper will'),
      );
  }

  async function eachBatch(payload: BatchPayload): Promise<void> {
    const { batch, resolveOffset, isRunning } = payload;
    const partition = batch.partition;
    const ctx: Ctx = { ...payload, heart: new Heart(payload.heartbeat) };
    try {
      if (!projection.knows(partition)) {
        await loadSinkPositions(
          [...new Set([...assigned, partition])].filter((p) => !projection.knows(p)),
          ctx,
        );
      }
      for (const message of batch.messages) {
        if (!isRunning()) return;
        const offset = Number(message.offset);
        // A staged batch is known by its header, without decoding it: its seal brings its rows in.
        const staged = stageHeader(message);
        let fact: PointsFact | null = null;
        if (staged === undefined) {
          try {
            fact = pointsCodec.decode(message.value ?? Buffer.alloc(0));
          } catch (error) {
            if (!(error instanceof UndecodableEventError)) throw error;
            // At or below the sink position it was dead-lettered before later rows were written.
            if (!projection.inSink(partition, offset)) await reject(ctx, partition, message, error.message);
            resolveOffset(message.offset);
            continue;
          }
        }
        const decision = fact === null ? projection.decideStaged(partition, offset, staged!) : projection.decide(partition, offset, fact);
        switch (decision.kind) {
          case 'buffer':
            if (projection.wouldOverflow(decision.rows)) await flush(ctx);
            projection.add(decision.segment, Date.now());
            break;
          case 'seal':
            projection.addSeal(decision.seal);
            if (decision.leftStage !== undefined) await dropSealedStage(decision.seal, decision.leftStage);
            break;
          case 'reject':
            await reject(ctx, partition, message, decision.reason);
            if (fact?.type === 'PointBatch') await failUpload(ctx, partition, offset, fact.task_id, decision.reason);
            break;
          case 'skip':
          case 'staged':
            break;
          case 'stagedSeal':
            await flush(ctx);
            await sealStaged(ctx, decision.seal);
            projection.addSeal({ task_id: decision.seal.task_id, partition, offset });
            break;
          case 'delete':
            await flush(ctx);
            await applyDeletion(ctx, decision.deletion);
            projection.addSeal({ task_id: decision.deletion.task_id, partition, offset });
            break;
        }
        resolveOffset(message.offset);
        await ctx.heart.beat();
      }
      if (projection.hasSeals || projection.isFull || projection.age(Date.now()) >= LINGER_MS) await flush(ctx);
      else await commitDone(ctx);
    } catch (error) {
      if (error instanceof Stopping) return;
      throw error;
    }
  }

  await runConsumer(
    consumer,
    topics.points,
    { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch },
    logger,
    ingest.startRetry,
  );
  logger.info({ group: groupId, batch_rows: settings.MERIDIAN_PROJECTOR_BATCH_ROWS }, 'projector started');
  // Staged uploads' abandoned stages, whether staging is on now or was before.
  const sweeper = startStageSweeper({
    sweep: (age) => stages.sweep(age),
    ttlMs: settings.MERIDIAN_STAGE_TTL_MS,
    intervalMs: settings.MERIDIAN_STAGE_SWEEP_INTERVAL_MS,
    logger,
  });

  return {
    watch,
    owns: (partition) => assigned.includes(partition),
    async stop() {
      await sweeper.stop();
      await consumer.stop();
      inserts.flush();
    },
  };
}
