import type { ConsumerWatch } from '@meridian/kafka';
import type { IngestDeps } from './ingest-deps.ts';
import { startProjector } from './projector/index.ts';
import { startFilesProjector } from './read-models/files.ts';
import { startTasksProjector } from './read-models/tasks.ts';
import { startCommandConsumer } from './commands/consumer.ts';

export type RunningWorker = {
  /** The worker's group consumers, for its health (apps/ingest/src/health). */
  readonly consumers: readonly ConsumerWatch[];
  stop(): Promise<void>;
};

/** The ingest worker: runs upload commands into point facts, projects the facts, the tasks and the files into ClickHouse. */
export async function startIngest(ingest: IngestDeps): Promise<RunningWorker> {
  const tasksProjector = await startTasksProjector(ingest, ingest.taskReadModel, ingest.taskReadModelWriter);
  const filesProjector = await startFilesProjector(ingest, ingest.fileReadModel, ingest.fileReadModelWriter);
  const commands = await startCommandConsumer(ingest);
  const projector = await startProjector(ingest);
  return {
    consumers: [commands.watch, projector.watch, tasksProjector.watch, filesProjector.watch],
    async stop() {
      await Promise.all([commands.stop(), projector.stop(), tasksProjector.stop(), filesProjector.stop()]);
    },
  };
}
