import { clickhouseTaskReadModel, clickhouseTaskReadModelWriter } from '@meridian/clickhouse';
import type { ConsumerWatch } from '@meridian/kafka';
import type { Platform } from '@meridian/platform';
import { startProjector } from './projector/index.ts';
import { startTasksProjector } from './tasks-projector/projector.ts';
import { startCommandConsumer } from './commands/consumer.ts';

export type RunningWorker = {
  /** The worker's group consumers, for its health (apps/ingest/src/health). */
  readonly consumers: readonly ConsumerWatch[];
  stop(): Promise<void>;
};

/** The ingest worker: runs upload commands into point facts, projects the facts and the tasks into ClickHouse. */
export async function startIngest(platform: Platform): Promise<RunningWorker> {
  const taskReadModel = clickhouseTaskReadModel(platform.clickhouseOptions);
  const tasksProjector = await startTasksProjector(platform, taskReadModel, clickhouseTaskReadModelWriter(platform.clickhouse));
  const commands = await startCommandConsumer(platform, taskReadModel);
  const projector = await startProjector(platform);
  return {
    consumers: [commands.watch, projector.watch, tasksProjector.watch],
    async stop() {
      await Promise.all([commands.stop(), projector.stop(), tasksProjector.stop()]);
    },
  };
}
