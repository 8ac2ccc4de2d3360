import { adapterOptions, loadSettingsOrExit } from '@meridian/config';
import { createLogger, silenceKnownWarnings, withTimeout } from '@meridian/observability';
import { createAdapters, createPlatform } from '@meridian/platform';
import { untilDone } from '@meridian/runtime';
import { composeIngest } from './compose.ts';
import { startHealthServer } from './health/health-server.ts';
import { startIngest, type RunningWorker } from './worker.ts';

silenceKnownWarnings();

/** The ingest worker process (main.ts loads it once the compile cache is on): the only place that reads the environment. */
async function main(): Promise<void> {
  const settings = loadSettingsOrExit(process.env, 'meridian ingest');
  const logger = createLogger({ name: 'ingest', level: settings.LOG_LEVEL, pretty: settings.MERIDIAN_DEV_LOGS });
  const options = adapterOptions(settings, 'ingest');
  const adapters = createAdapters(options, logger);
  const platform = createPlatform(adapters, options, logger);
  let worker: RunningWorker | null = null;
  // Up before the waiting below, so a probe sees a worker that is alive but not ready yet.
  const health =
    settings.MERIDIAN_INGEST_HEALTH_PORT === ''
      ? null
      : await startHealthServer({
          host: settings.MERIDIAN_INGEST_HEALTH_HOST,
          port: settings.MERIDIAN_INGEST_HEALTH_PORT,
          probes: platform.probes,
          consumers: () => worker?.consumers ?? [],
          readyTimeoutMs: settings.MERIDIAN_READY_TIMEOUT_MS,
          logger,
        });
  if (health) logger.info({ host: settings.MERIDIAN_INGEST_HEALTH_HOST, port: health.port }, 'ingest probe listener up');
  // A dependency still starting, or the api creating the same topics at this moment, is waited out.
  await untilDone('preparing topics, tables and bucket', () => platform.prepare(), logger);
  const running = await startIngest(composeIngest(settings, logger, adapters, options));
  worker = running;

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await running.stop();
    await platform.close();
    await health?.close();
    process.exit(code);
  };
  process.once('SIGINT', () => {
    logger.info({ signal: 'SIGINT' }, 'ingest stopping');
    void stop(0);
  });
  process.once('SIGTERM', () => {
    logger.info({ signal: 'SIGTERM' }, 'ingest stopping');
    void stop(0);
  });
  // A consumer kafkajs gave up on (restart=false) ends the process, rather than leaving it alive
  // and idle for /healthz to report: nothing in the process would run that consumer again, a
  // fresh process (new connections, new group member) is the retry, and an exit reaches every
  // supervisor (Kubernetes, compose's restart policy, systemd) whether or not the probe
  // listener is on. /healthz answers 503 while the worker stops. Exactly-once does not rest on
  // a clean stop (transactions, fencing), so the stop is bounded by the session timeout, after
  // which the group evicts this member anyway.
  void Promise.race(running.consumers.map((c) => c.failed)).then(async (reason) => {
    logger.fatal({ reason }, 'an ingest consumer failed for good; the worker exits so that its supervisor starts a new one');
    await withTimeout(stop(1), settings.KAFKA_SESSION_TIMEOUT_MS, 'stopping the worker').catch((error: unknown) => {
      logger.error({ err: error }, 'the worker did not stop cleanly');
      process.exit(1);
    });
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`meridian ingest failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
