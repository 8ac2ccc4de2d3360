import { clickhouseTaskReadModel, clickhouseTaskReadModelWriter } from '@meridian/clickhouse';
import type { Platform } from '@meridian/platform';
import { startProjector } from './projector/index.ts';
import { startTasksProjector } from './tasks-projector/projector.ts';
import { startCommandConsumer } from './uploads/command-consumer.ts';

export type RunningWorker = { stop(): Promise<void> };

/** The ingest worker: runs upload commands into point facts, projects the facts and the tasks into ClickHouse. */
export async function startIngest(platform: Platform): Promise<RunningWorker> {
  const taskReadModel = clickhouseTaskReadModel(platform.clickhouseOptions);
  const tasksProjector = await startTasksProjector(platform, taskReadModel, clickhouseTaskReadModelWriter(platform.clickhouse));
  const commands = await startCommandConsumer(platform, taskReadModel);
  const projector = await startProjector(platform);
  return {
    async stop() {
      await Promise.all([commands.stop(), projector.stop(), tasksProjector.stop()]);
    },
  };
}
