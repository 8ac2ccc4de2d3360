import type { AdapterOptions, Settings } from '@meridian/config';
import { clickhouseTaskReadModel } from '@meridian/clickhouse';
import { consumerGroupsFor, topicsFor } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import { foldContext, type Adapters, type Platform } from '@meridian/platform';
import type { ApiServices } from './api-services.ts';

/** The api's services over the process's adapters (main.ts; tests build the api the same way). */
export function composeApi(settings: Settings, logger: Logger, adapters: Adapters, options: AdapterOptions, platform: Platform): ApiServices {
  return {
    settings,
    logger,
    topics: topicsFor(options.topicPrefix),
    groups: consumerGroupsFor(options.topicPrefix),
    log: adapters.log,
    blobs: adapters.blobs,
    folds: foldContext(adapters, options, logger),
    clickhouseOptions: options.clickhouse,
    taskReadModel: clickhouseTaskReadModel(options.clickhouse),
    probes: platform.probes,
  };
}
