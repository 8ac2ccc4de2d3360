import { READS_STAGED_UPLOADS, type PointsFact, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import type { ConsumerWatch } from '@meridian/kafka';
import { runConsumer } from '@meridian/runtime';
import { Projection } from '@meridian/projection';
import type { ProjectorWork } from './batch-context.ts';
import { fetchWait } from './options.ts';
import { projectBatches } from './each-batch.ts';
import { InsertLog } from './insert-log.ts';
import { startStageSweeper } from './stage-sweeper.ts';
import type { IngestDeps } from '../ingest-deps.ts';

/** owns: whether this member projects a points partition now (the retention runner leads where partition 0 is). */
export type RunningProjector = { readonly watch: ConsumerWatch; owns(partition: number): boolean; stop(): Promise<void> };

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
 * - A fetch's rows go in one insert (each-batch.ts). ClickHouse's cost of an insert is mostly per
 *   insert at push sizes (a part in points and in each of its views, merged again later), so a
 *   fetch may wait up to MERIDIAN_PROJECTOR_FETCH_WAIT_MS (off by default) for more records.
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
  const { log, topics } = ingest;
  const options = ingest.options.projector;
  const logger = ingest.logger.child({ component: 'projector' });
  const groupId = ingest.groups.projector;
  const sink = ingest.pointsSink;
  const stages = ingest.pointsStages;
  const pointsCodec = createEventCodec<PointsFact>();
  const taskCodec = createEventCodec<TaskEvent>();
  const producer = await log.writer();
  const projection = new Projection(options.batchRows);
  const inserts = new InsertLog(logger);
  let assigned: number[] = [];

  const consumer = log.consumer({
    groupId,
    sessionTimeoutMs: options.sessionTimeoutMs,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    maxBytesPerPartition: MAX_BYTES_PER_PARTITION,
    maxBytes: MAX_BYTES,
    ...fetchWait(options.fetchWaitMs),
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

  const work: ProjectorWork = { ingest, options, logger, groupId, sink, stages, pointsCodec, taskCodec, producer, projection, inserts };
  const eachBatch = projectBatches(work, () => assigned);

  await runConsumer(
    consumer,
    topics.points,
    { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch },
    logger,
    ingest.startRetry,
  );
  logger.info({ group: groupId, batch_rows: options.batchRows }, 'projector started');
  // Staged uploads' abandoned stages, whether staging is on now or was before.
  const sweeper = startStageSweeper({
    sweep: (age) => stages.sweep(age),
    ttlMs: options.stageTtlMs,
    intervalMs: options.stageSweepIntervalMs,
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
