import type { Producer } from 'kafkajs';
import { composeApi, type ApiServices } from '@meridian/api';
import { adapterOptions, type Settings } from '@meridian/config';
import { composeIngest, type IngestDeps } from '@meridian/ingest';
import type { KafkaEventLog } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import type { FoldContext } from '@meridian/folds';
import { createAdapters, createPlatform as createStartup, foldContext, type Platform as Startup } from '@meridian/platform';
import type { UntilDoneOptions } from '@meridian/runtime';
import { createStorage, type Storage } from '@meridian/storage';
import { composeCli, type CliServices } from '../../apps/cli/src/cli-services.ts';

/**
 * A process's composition as the tests use it: the start-up work, what the api, the worker,
 * the CLI and the folds are built on (composed as each main.ts does), and the raw clients the
 * tests reach past the adapters with (tests may; the apps may not).
 */
export type Platform = Startup &
  IngestDeps &
  ApiServices &
  CliServices &
  FoldContext & {
    readonly kafka: KafkaEventLog['kafka'];
    readonly admin: KafkaEventLog['admin'];
    /** The bucket's client, for checks of what is stored. */
    readonly storage: Storage;
    /** The process's idempotent producer. */
    producer(): Promise<Producer>;
  };

export function createPlatform(settings: Settings, logger: Logger, component: string, startRetry: UntilDoneOptions = {}): Platform {
  const options = adapterOptions(settings, component);
  const adapters = createAdapters(options, logger);
  const startup = createStartup(adapters, options, logger, startRetry);
  return {
    ...foldContext(adapters, options, logger, startRetry),
    ...composeIngest(settings, logger, adapters, options),
    ...composeApi(settings, logger, adapters, options, startup),
    ...composeCli(logger, adapters, options, startup, startRetry),
    log: adapters.log,
    blobs: adapters.blobs,
    clickhouseOptions: { ...options.clickhouse, logger },
    startRetry,
    probes: startup.probes,
    prepareTopics: () => startup.prepareTopics(),
    prepare: () => startup.prepare(),
    close: () => startup.close(),
    kafka: adapters.log.kafka,
    admin: adapters.log.admin,
    storage: createStorage(options.storage),
    producer: async () => (await adapters.log.writer()) as Producer,
  };
}
