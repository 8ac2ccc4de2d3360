import type { ConsumerWatch } from '@meridian/kafka';
import type { IngestDeps } from './ingest-deps.ts';
import { startProjector } from './projector/index.ts';
import { startTasksProjector } from './tasks-projector/projector.ts';
import { startCommandConsumer } from './commands/consumer.ts';

export type RunningWorker = {
  /** The worker's group consumers, for its health (apps/ingest/src/health). */
  readonly consumers: readonly ConsumerWatch[];
  stop(): Promise<void>;
};

/** The ingest worker: runs upload commands into point facts, projects the facts and the tasks into ClickHouse. */
export async function startIngest(ingest: IngestDeps): Promise<RunningWorker> {
  const tasksProjector = await startTasksProjector(ingest, ingest.taskReadModel, ingest.taskReadModelWriter);
  const commands = await startCommandConsumer(ingest);
  const projector = await startProjector(ingest);
  return {
    consumers: [commands.watch, projector.watch, tasksProjector.watch],
    async stop() {
      await Promise.all([commands.stop(), projector.stop(), tasksProjector.stop()]);
    },
  };
}
