import { adapterOptions, loadSettingsOrExit } from '@meridian/config';
import { createLogger, logUnhandledRejections, silenceKnownWarnings } from '@meridian/observability';
import { createAdapters, createPlatform } from '@meridian/platform';
import { untilDone } from '@meridian/runtime';
import { composeApi } from './compose.ts';
import { createHttpServer, httpServerOptions } from './http/http-server.ts';
import { buildApi } from './server.ts';

silenceKnownWarnings();

/** The api process (main.ts loads it once the compile cache is on): the only place that reads the environment. */
async function main(): Promise<void> {
  const settings = loadSettingsOrExit(process.env, 'meridian api');
  const logger = createLogger({ name: 'api', level: settings.LOG_LEVEL, pretty: settings.MERIDIAN_DEV_LOGS });
  logUnhandledRejections(logger);
  const options = adapterOptions(settings, 'api');
  const adapters = createAdapters(options, logger);
  const platform = createPlatform(adapters, options, logger);
  const api = await buildApi(composeApi(settings, logger, adapters, options, platform));

  // Listen at once, even while a dependency is down: /healthz answers and /readyz names what is
  // missing. Topics, tables and bucket are prepared as soon as they can be; requests are served
  // once the logs are caught up.
  const serverOptions = httpServerOptions(settings);
  const server = createHttpServer(serverOptions, api.app, logger).listen(settings.MERIDIAN_API_PORT, settings.MERIDIAN_API_HOST, () => {
    logger.info({ url: `http://${settings.MERIDIAN_API_HOST}:${settings.MERIDIAN_API_PORT}` }, 'api listening');
  });
  const adminPort = settings.MERIDIAN_ADMIN_PORT;
  const adminServer =
    api.adminApp && adminPort !== ''
      ? createHttpServer(serverOptions, api.adminApp, logger).listen(adminPort, settings.MERIDIAN_ADMIN_HOST, () => {
          logger.info({ url: `http://${settings.MERIDIAN_ADMIN_HOST}:${adminPort}` }, 'admin listener (/metrics, /readyz) listening');
        })
      : null;
  untilDone('preparing topics, tables and bucket', () => platform.prepare(), logger)
    .then(() => api.start())
    .catch((error: unknown) => {
      logger.fatal({ err: error }, 'api could not follow its logs');
      process.exit(1);
    });

  const stop = async (signal: string) => {
    logger.info({ signal }, 'api stopping');
    server.close();
    adminServer?.close();
    await api.stop();
    await platform.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  process.stderr.write(`meridian api failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
