import { LiveTasks, type BatchPayload, type TaskEvent, type TaskReadModel, type TaskReadModelWriter } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import type { ConsumerWatch } from '@meridian/kafka';
import { runConsumer } from '@meridian/platform';
import { retry, RETRY_POLICIES } from '@meridian/retry';
import { projectTaskBatch, taskEventsAfter } from '@meridian/projection';
import type { IngestDeps } from '../ingest-deps.ts';

export type RunningTasksProjector = { readonly watch: ConsumerWatch; stop(): Promise<void> };

/** Thrown out of a retry loop when the consumer is stopping: the work is left to the next owner. */
class Stopping extends Error {}

const DAY_MS = 86_400_000;

/**
 * Projects the tasks topic into the tasks read model (issue 13), exactly once, without transactions:
 *
 * - Each fetched batch is folded with the domain's fold (LiveTasks over applyTaskEvent) and the
 *   tasks it changed are written as rows carrying the (partition, offset) of their last event;
 *   then the partition's position (the batch's last offset). Rows are idempotent: a task's row
 *   at a later offset wins (ReplacingMergeTree), and one written twice is the same row.
 * - On every assignment the position is read back from the read model; the consumer resumes from
 *   its committed offsets, which are committed only after the batch's rows and position are
 *   written (so never past the position), and events at or below the position are skipped. The
 *   fold's state is the read model's unfinished rows of those partitions (a row ahead of the
 *   position skips its re-read events). A read model restored to behind the committed offsets is
 *   not caught up from the log: seeking to the position on assignment would do it (not built).
 * - A command for a task not in memory may repeat one that finished already: the read model is
 *   asked (one query per batch) and such a command is ignored, so it never reverts a finished row.
 * - Finished tasks older than MERIDIAN_TASK_RETENTION_DAYS are removed on a timer.
 */
export async function startTasksProjector(ingest: IngestDeps, readModel: TaskReadModel, writer: TaskReadModelWriter): Promise<RunningTasksProjector> {
  const { log, topics, settings } = ingest;
  const logger = ingest.logger.child({ component: 'tasks-projector' });
  const groupId = ingest.groups.tasksProjector;
  const codec = createEventCodec<TaskEvent>();
  let live = new LiveTasks();
  /** Per partition of this assignment, the last offset the read model covers. */
  let positions = new Map<number, number>();
  let assigned: number[] = [];

  const consumer = log.consumer({ groupId, sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS, maxWaitTimeMs: 250, readUncommitted: false });
  const watch: ConsumerWatch = consumer.watch('tasks projector');
  consumer.onJoin((e) => {
    // kafkajs resumes from the committed offsets after a join: the fold is rebuilt from the read model.
    live = new LiveTasks();
    positions = new Map();
    assigned = [...(e.assignment[topics.tasks] ?? [])].sort((a, b) => a - b);
    logger.info({ partitions: assigned }, 'tasks projector joined its consumer group');
  });

  // A fetch holding only transaction markers never reaches eachBatch: its end is recorded as the
  // position all the same (every record before it is written: batches of a partition come in
  // order), so the read model's positions reach the log's end. Best effort: missing one only
  // means re-reading markers after a restart.
  consumer.onBatchEnd((payload) => {
    const last = Number(payload.lastOffset);
    const known = positions.get(payload.partition);
    if (payload.topic !== topics.tasks || payload.batchSize !== 0 || known === undefined || !(last > known)) return;
    positions.set(payload.partition, last);
    writer.write([], new Map([[payload.partition, last]])).catch((error: unknown) => logger.debug({ err: error }, 'recording a position past transaction markers failed'));
  });

  /** Runs `attempt` until it succeeds, backing off, heartbeating; stops only when the consumer stops. */
  function persist<T>(what: string, payload: BatchPayload, attempt: () => Promise<T>): Promise<T> {
    return retry(attempt, {
      ...RETRY_POLICIES.projector,
      retriable: () => {
        if (!payload.isRunning()) throw new Stopping(`${what}: stopping`);
        return true;
      },
      onRetry: (error, n, delay) => logger.warn({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
      wait: async (ms) => { await new Promise((r) => setTimeout(r, ms)); await payload.heartbeat(); },
    });
  }

  async function load(partitions: readonly number[], payload: BatchPayload): Promise<void> {
    const [stored, rows] = await persist('reading the tasks read model', payload, async () => [await readModel.positions(), await readModel.unfinished(partitions)] as const);
    for (const p of partitions) positions.set(p, stored.get(p) ?? -1);
    live.seed(rows);
    logger.info({ positions: Object.fromEntries(positions), unfinished: rows.length }, 'tasks projector resumes after the read model positions');
  }

  async function eachBatch(payload: BatchPayload): Promise<void> {
    const { batch } = payload;
    const partition = batch.partition;
    try {
      if (!positions.has(partition)) await load([...new Set([...assigned, partition])].filter((p) => !positions.has(p)), payload);
      const after = positions.get(partition)!;
      const last = Number(batch.lastOffset());
      if (last > after) {
        const events = taskEventsAfter(codec, partition, batch.messages, after);
        await projectTaskBatch({ live, readModel, writer, persist: (what, attempt) => persist(what, payload, attempt) }, partition, events, last);
        positions.set(partition, last);
      }
      payload.resolveOffset(batch.lastOffset());
      await payload.commitOffsetsIfNecessary();
      await payload.heartbeat();
    } catch (error) {
      if (error instanceof Stopping) return;
      throw error;
    }
  }

  await runConsumer(consumer, topics.tasks, { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch }, logger, ingest.startRetry);
  logger.info({ group: groupId }, 'tasks projector started');

  const retentionMs = settings.MERIDIAN_TASK_RETENTION_DAYS * DAY_MS;
  const expiry = setInterval(() => {
    writer.expire(Date.now() - retentionMs).catch((error: unknown) => logger.warn({ err: error }, 'removing expired tasks from the read model failed; tried again at the next interval'));
  }, settings.MERIDIAN_TASK_RETENTION_INTERVAL_MS);
  expiry.unref();

  return {
    watch,
    async stop() {
      clearInterval(expiry);
      await consumer.stop();
    },
  };
}
