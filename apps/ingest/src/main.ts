import { loadSettings, ConfigError } from '@meridian/config';
import { createLogger, silenceKnownWarnings } from '@meridian/observability';
import { createPlatform, untilDone } from '@meridian/platform';
import { startIngest } from './worker.ts';

silenceKnownWarnings();

/** The ingest worker's entry point: the only place that reads the environment. */
async function main(): Promise<void> {
  let settings;
  try {
    settings = loadSettings(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`meridian ingest: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger({ name: 'ingest', level: settings.LOG_LEVEL, pretty: settings.MERIDIAN_DEV_LOGS });
  const platform = createPlatform(settings, logger, 'ingest');
  // A dependency still starting, or the api creating the same topics at this moment, is waited out.
  await untilDone('preparing topics, tables and bucket', () => platform.prepare(), logger);
  const worker = await startIngest(platform);

  const stop = async (signal: string) => {
    logger.info({ signal }, 'ingest stopping');
    await worker.stop();
    await platform.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  process.stderr.write(`meridian ingest failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
