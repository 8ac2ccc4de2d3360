import type { PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { untilDone } from '@meridian/runtime';
import type { ConsumerWatch } from '@meridian/kafka';
import type { IngestDeps } from './ingest-deps.ts';
import { startProjector } from './projector/index.ts';
import { startRetentionRunner } from './retention/start.ts';
import { startRollupSeals } from './rollup-seals/start.ts';
import { startArchiver } from './archive/start.ts';
import { startFilesProjector } from './read-models/files.ts';
import { startTasksProjector } from './read-models/tasks.ts';
import { startCommandConsumer, type HandlerContext, type RunningHandlers } from './commands/consumer.ts';
import { startFileCommands } from './files/file-commands.ts';
import { stagingGate } from './uploads/staging-gate.ts';
import { uploadCommands } from './uploads/upload-commands.ts';

export type RunningWorker = {
  /** The worker's group consumers, for its health (apps/ingest/src/health). */
  readonly consumers: readonly ConsumerWatch[];
  stop(): Promise<void>;
};

type Piece = { readonly watch: ConsumerWatch; stop(): Promise<void> };

/**
 * The ingest worker: runs upload commands into point facts, projects the facts, the tasks and the files into ClickHouse.
 *
 * Its four consumers start at once (each start is a fold, a read-model query or a group join,
 * 0.2–0.6 s apiece): none reads what another one's start produces. The commands
 * consumer decides on the accounts fold and on the tasks read model plus the log's
 * tail, never on the projectors having started; the projectors resume from the positions
 * stored in their read models, whoever runs. The ordering that does matter, folds caught up
 * before the first command is decided, stays inside startCommandConsumer. The worker is ready
 * (the probe listener's /readyz) only once every piece has started.
 */
export async function startIngest(ingest: IngestDeps): Promise<RunningWorker> {
  const { options } = ingest;
  const [commands, projector, tasksProjector, filesProjector] = await startAll([
    startCommandConsumer(ingest, options.commands, (context) => startCommandHandlers(ingest, context)),
    startProjector(ingest),
    startTasksProjector(ingest, options.tasksReadModel, ingest.taskReadModel, ingest.taskReadModelWriter),
    startFilesProjector(ingest, options.filesReadModel, ingest.fileReadModel, ingest.fileReadModelWriter),
  ]);
  const pieces = [commands, projector, tasksProjector, filesProjector];
  // Retention writes deletions to the log; the member projecting points partition 0 runs it, one per deployment.
  const retention = startRetentionRunner(ingest, options.retention, () => projector.owns(0));
  // The seal pass of the rollups: one per deployment too.
  const seals = startRollupSeals(ingest, options.rollupSeals, () => projector.owns(0));
  // The archiver too: one per deployment, whose trim waits for this worker's projector group.
  const archiver = startArchiver(ingest, options.archive, () => projector.owns(0));
  return {
    consumers: pieces.map((p) => p.watch),
    async stop() {
      await Promise.all([retention.stop(), seals.stop(), archiver.stop()]);
      await Promise.all(pieces.map((p) => p.stop()));
    },
  };
}

/** The command registry: each command type of the tasks topic and its handler. */
async function startCommandHandlers(ingest: IngestDeps, { tasks, user }: HandlerContext): Promise<RunningHandlers> {
  const { log, topics, logger } = ingest;
  const { staging, stageMinBytes, pointBatchDeltas, pointBatchPacked, ...run } = ingest.options.uploads;
  // The points topic's partitions, as the broker has them (more than KAFKA_POINTS_PARTITIONS if an
  // operator made it larger): an upload puts each batch in its metric's partition itself. Asked
  // until answered: right after the api created the topic its partitions may still be electing
  // a leader, which kafkajs' offsets request gives up on at once (NOT_LEADER_FOR_PARTITION).
  const [fileCommands, progressProducer, pointsPartitions] = await Promise.all([
    startFileCommands(ingest, ingest.options.files, tasks),
    log.writer(),
    untilDone("reading the points topic's partitions", () => log.endOffsets(topics.points), logger).then((ends) => ends.size),
  ]);
  return {
    handlers: {
      MetricsUploadRequested: uploadCommands({
        ...run,
        topics,
        storage: ingest.blobs,
        logger: logger.child({ component: 'uploads' }),
        tasks,
        pointsCodec: createEventCodec<PointsFact>(undefined, { writeDeltas: pointBatchDeltas, writePacked: pointBatchPacked }),
        progressProducer,
        pointsPartitions,
        user,
        stage: staging === 'off' ? null : ingest.pointsStages,
        mayStage:
          staging === 'off'
            ? () => Promise.resolve(false)
            : stagingGate(staging, stageMinBytes, ingest.log, ingest.groups.projector, logger.child({ component: 'uploads' })),
      }),
      FileDefinitionRequested: fileCommands,
    },
    stop: () => fileCommands.stop(),
  };
}

/** Waits for every start; when one fails, stops the ones that started (their consumers stay in no group) and throws its error. */
async function startAll<T extends Piece[]>(starts: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((r) => r.status === 'rejected');
  if (failed === undefined) return results.map((r) => (r as PromiseFulfilledResult<Piece>).value) as T;
  await Promise.allSettled(results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.stop()] : [])));
  throw failed.reason;
}
