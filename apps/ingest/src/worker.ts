import type { Platform } from '@meridian/platform';
import { startCommandConsumer } from './uploads/command-consumer.ts';

export type RunningWorker = { stop(): Promise<void> };

/** The ingest worker: runs upload commands into point facts, and projects the facts into ClickHouse. */
export async function startIngest(platform: Platform): Promise<RunningWorker> {
  const commands = await startCommandConsumer(platform);
  return {
    async stop() {
      await commands.stop();
    },
  };
}
