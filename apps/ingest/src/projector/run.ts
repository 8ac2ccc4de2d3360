import { ConfigError, loadSettings } from '@meridian/config';
import { createLogger } from '@meridian/observability';
import { createPlatform } from '@meridian/platform';
import { startProjector } from './projector.ts';

/**
 * The projector alone, as a process (`node apps/ingest/src/projector/run.ts`): for the fault
 * test and for measuring it. In production it runs inside the ingest worker (worker.ts).
 */
async function main(): Promise<void> {
  let settings;
  try {
    settings = loadSettings(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`meridian projector: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger({ name: 'projector', level: settings.LOG_LEVEL, pretty: settings.MERIDIAN_DEV_LOGS });
  const platform = createPlatform(settings, logger, 'projector');
  await platform.prepare();
  const projector = await startProjector(platform);
  const stop = async (signal: string) => {
    logger.info({ signal }, 'projector stopping');
    await projector.stop();
    await platform.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  process.stderr.write(`meridian projector failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
