import { startIngest, type RunningWorker } from '@meridian/ingest';
import type { Settings } from '@meridian/config';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from './platform.ts';

/** The ingest worker in this test process, on the run's topics. */
export async function startWorker(settings: Settings): Promise<{ platform: Platform; worker: RunningWorker; close(): Promise<void> }> {
  const platform = createPlatform(settings, createLogger({ name: 'ingest', level: settings.LOG_LEVEL }), 'ingest');
  await platform.prepare();
  const worker = await startIngest(platform);
  return {
    platform,
    worker,
    async close() {
      await worker.stop();
      await platform.close();
    },
  };
}
