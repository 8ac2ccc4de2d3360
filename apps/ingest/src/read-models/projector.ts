import type { BatchPayload, ConsumedMessage } from '@meridian/domain';
import type { ConsumerWatch } from '@meridian/kafka';
import { runConsumer } from '@meridian/runtime';
import { persistWhileRunning, Stopping, type Persist } from '../persist.ts';
import type { IngestDeps } from '../ingest-deps.ts';
import type { ReadModelOptions } from './options.ts';

export type RunningReadModelProjector = { readonly watch: ConsumerWatch; stop(): Promise<void> };

/** One read model fed from one topic (tasks, files): what differs between them. */
export type ReadModelProjection = {
  /** Names the logs and the consumer's watch. */
  readonly name: string;
  readonly groupId: string;
  readonly topic: string;
  /**
   * Bytes a fetch waits for, up to the consumer's 250 ms, before it answers (1 when absent: at
   * once). A read model no request waits for can take a busy topic's events in fewer, larger
   * batches: fewer ClickHouse rounds and Kafka fetches per event.
   */
  readonly fetchMinBytes?: number;
  /** Forgets what the projection holds between batches: the group was (re)joined. */
  reset(): void;
  /** On the first batch after a (re)join: per partition asked, the last offset the read model covers, and whatever else it needs to resume. */
  load(partitions: readonly number[], persist: Persist): Promise<Map<number, number>>;
  /**
   * Projects the messages of one batch after `after`, the batch ending at `last` (markers
   * included): rows, then the position; or folds them, for `flush` to write.
   */
  project(partition: number, messages: readonly ConsumedMessage[], after: number, last: number, persist: Persist): Promise<void>;
  /** At the end of a fetch: writes what `project` folded from its batches (rows, then positions) at once. */
  flush?(persist: Persist): Promise<void>;
  /** Records positions alone (fetches that held transaction markers only). */
  writePositions(positions: ReadonlyMap<number, number>): Promise<void>;
};

/**
 * Projects a topic into a read model exactly once, without transactions (the tasks and files
 * read models):
 *
 * - Each fetched batch is handed to the projection, which writes idempotent rows (a row at a later
 *   offset wins; one written twice is the same row), then the partition's position (the batch's
 *   last offset); a projection with `flush` folds the batches of a fetch and writes them at its
 *   last batch, rows then positions, in one write.
 * - On every assignment the positions are read back from the read model; the consumer resumes from
 *   its committed offsets, which are committed only after the batch's rows and position are
 *   written (so never past the position), and events at or below the position are skipped. A read
 *   model restored to behind the committed offsets is not caught up from the log: seeking to the
 *   position on assignment would do it (not built).
 * - Every write and read is retried until it succeeds, heartbeating, until the consumer stops.
 *
 * Stays one function: the join, batch-end and batch handlers share this assignment's positions and pending
 * markers by closure, each handler named; the state has one owner.
 */
export async function startReadModelProjector(
  ingest: IngestDeps,
  options: ReadModelOptions,
  projection: ReadModelProjection,
): Promise<RunningReadModelProjector> {
  const { log } = ingest;
  const { topic, name, groupId } = projection;
  const logger = ingest.logger.child({ component: `${name}-projector` });
  /** Per partition of this assignment, the last offset the read model covers. */
  let positions = new Map<number, number>();
  let assigned: number[] = [];
  /** Positions past transaction markers not written yet, and the timer that writes them together. */
  const markers = new Map<number, number>();
  let markerFlush: NodeJS.Timeout | null = null;
  const flushMarkers = () => {
    markerFlush = null;
    if (markers.size === 0) return;
    const due = new Map(markers);
    markers.clear();
    projection.writePositions(due).catch((error: unknown) => logger.debug({ err: error }, 'recording a position past transaction markers failed'));
  };

  const consumer = log.consumer({
    groupId,
    sessionTimeoutMs: options.sessionTimeoutMs,
    maxWaitTimeMs: 250,
    ...(projection.fetchMinBytes === undefined ? {} : { minBytes: projection.fetchMinBytes }),
    readUncommitted: false,
  });
  const watch: ConsumerWatch = consumer.watch(`${name} projector`);
  consumer.onJoin((e) => {
    // kafkajs resumes from the committed offsets after a join: what the projection holds is read again.
    projection.reset();
    positions = new Map();
    assigned = [...(e.assignment[topic] ?? [])].sort((a, b) => a - b);
    logger.info({ partitions: assigned }, `${name} projector joined its consumer group`);
  });

  // A fetch holding only transaction markers never reaches eachBatch: its end is recorded as the
  // position all the same (every record before it is written: batches of a partition come in
  // order), so the read model's positions reach the log's end. Every committed transaction ends
  // in such a fetch, so these positions are written together, at most once per
  // MERIDIAN_READ_MODEL_MARKER_FLUSH_MS (one small part each, not one per transaction), and not
  // at all when a batch of the partition writes its own position first. Best effort: missing
  // one only means re-reading markers after a restart.
  consumer.onBatchEnd((payload) => {
    const last = Number(payload.lastOffset);
    const known = positions.get(payload.partition);
    if (payload.topic !== topic || payload.batchSize !== 0 || known === undefined || !(last > known)) return;
    positions.set(payload.partition, last);
    markers.set(payload.partition, last);
    if (markerFlush === null) {
      markerFlush = setTimeout(flushMarkers, options.markerFlushMs);
      markerFlush.unref();
    }
  });

  async function eachBatch(payload: BatchPayload): Promise<void> {
    const { batch } = payload;
    const partition = batch.partition;
    const persist = persistWhileRunning(logger, payload);
    try {
      if (!positions.has(partition)) {
        const wanted = [...new Set([...assigned, partition])].filter((p) => !positions.has(p));
        const stored = await projection.load(wanted, persist);
        for (const p of wanted) positions.set(p, stored.get(p) ?? -1);
        logger.info({ positions: Object.fromEntries(positions) }, `${name} projector resumes after the read model positions`);
      }
      const after = positions.get(partition)!;
      const last = Number(batch.lastOffset());
      if (last > after) {
        await projection.project(partition, batch.messages, after, last, persist);
        positions.set(partition, last);
        // Its position is written with the fetch's rows, past any marker's still waiting.
        markers.delete(partition);
      }
      payload.resolveOffset(batch.lastOffset());
      // A fetch's batches (one per partition) are written together, at its last; its offsets are committed after.
      if (batch.lastOfFetch ?? true) {
        await projection.flush?.(persist);
        // Named explicitly: with autoCommit off, kafkajs's commitOffsetsIfNecessary() without
        // offsets commits only on an autoCommit interval or threshold, none set here, so it never
        // committed, and every new process fetched the whole topic again from offset 0, skipping it
        // by position after being ready: its memory grew with the history.
        const uncommitted = payload.uncommittedOffsets();
        if (uncommitted.topics.length > 0) await payload.commitOffsetsIfNecessary(uncommitted);
      }
      await payload.heartbeat();
    } catch (error) {
      if (error instanceof Stopping) return;
      throw error;
    }
  }

  await runConsumer(
    consumer,
    topic,
    { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch },
    logger,
    ingest.startRetry,
  );
  logger.info({ group: groupId }, `${name} projector started`);
  return {
    watch,
    async stop() {
      if (markerFlush !== null) clearTimeout(markerFlush);
      flushMarkers();
      await consumer.stop();
    },
  };
}
