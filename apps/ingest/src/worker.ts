import type { ConsumerWatch } from '@meridian/kafka';
import type { Platform } from '@meridian/platform';
import { startProjector } from './projector/index.ts';
import { startCommandConsumer } from './uploads/command-consumer.ts';

export type RunningWorker = {
  /** The worker's group consumers, for its health (apps/ingest/src/health). */
  readonly consumers: readonly ConsumerWatch[];
  stop(): Promise<void>;
};

/** The ingest worker: runs upload commands into point facts, and projects the facts into ClickHouse. */
export async function startIngest(platform: Platform): Promise<RunningWorker> {
  const commands = await startCommandConsumer(platform);
  const projector = await startProjector(platform);
  return {
    consumers: [commands.watch, projector.watch],
    async stop() {
      await Promise.all([commands.stop(), projector.stop()]);
    },
  };
}
