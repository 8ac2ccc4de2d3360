import { clickhouseFileReadModel, clickhouseFileReadModelWriter, clickhouseTaskReadModel, clickhouseTaskReadModelWriter, insertQuorumOf, LIVE_FILE_TABLES, LIVE_TASK_TABLES } from '@meridian/clickhouse';
import type { ConsumerWatch } from '@meridian/kafka';
import type { Platform } from '@meridian/platform';
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
export async function startIngest(platform: Platform): Promise<RunningWorker> {
  // On a cluster the read models write and read under the points sink's quorum (README: exactly-once with replicas).
  const quorum = insertQuorumOf(platform.settings);
  const taskReadModel = clickhouseTaskReadModel(platform.clickhouseOptions, LIVE_TASK_TABLES, quorum);
  const tasksProjector = await startTasksProjector(platform, taskReadModel, clickhouseTaskReadModelWriter(platform.clickhouse, LIVE_TASK_TABLES, quorum));
  const filesProjector = await startFilesProjector(platform, clickhouseFileReadModel(platform.clickhouseOptions, LIVE_FILE_TABLES, quorum), clickhouseFileReadModelWriter(platform.clickhouse, LIVE_FILE_TABLES, quorum));
  const commands = await startCommandConsumer(platform, taskReadModel);
  const projector = await startProjector(platform);
  return {
    consumers: [commands.watch, projector.watch, tasksProjector.watch, filesProjector.watch],
    async stop() {
      await Promise.all([commands.stop(), projector.stop(), tasksProjector.stop(), filesProjector.stop()]);
    },
  };
}
