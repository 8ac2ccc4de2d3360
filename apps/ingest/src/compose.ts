import type { AdapterOptions, Settings } from '@meridian/config';
import { clickhouseTaskReadModel, clickhouseTaskReadModelWriter, createPointsSink } from '@meridian/clickhouse';
import { consumerGroupsFor, topicsFor } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import { foldContext, type Adapters } from '@meridian/platform';
import type { IngestDeps } from './ingest-deps.ts';

/** The worker's dependencies over the process's adapters (main.ts; tests start the worker the same way). */
export function composeIngest(settings: Settings, logger: Logger, adapters: Adapters, options: AdapterOptions): IngestDeps {
  return {
    settings,
    logger,
    topics: topicsFor(options.topicPrefix),
    groups: consumerGroupsFor(options.topicPrefix),
    log: adapters.log,
    blobs: adapters.blobs,
    folds: foldContext(adapters, options, logger),
    taskReadModel: clickhouseTaskReadModel(options.clickhouse),
    taskReadModelWriter: clickhouseTaskReadModelWriter(adapters.clickhouse),
    pointsSink: createPointsSink(adapters.clickhouse, 'points', options.pointsQuorum),
    startRetry: {},
  };
}
