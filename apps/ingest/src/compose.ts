import type { AdapterOptions, Settings } from '@meridian/config';
import { clickhouseTaskReadModel, clickhouseTaskReadModelWriter, createPointsSink } from '@meridian/clickhouse';
import type { Logger } from '@meridian/observability';
import { sharedServices, type Adapters } from '@meridian/platform';
import type { IngestDeps } from './ingest-deps.ts';

/** The worker's dependencies over the process's adapters (main.ts; tests start the worker the same way). */
export function composeIngest(settings: Settings, logger: Logger, adapters: Adapters, options: AdapterOptions): IngestDeps {
  return {
    ...sharedServices(adapters, options, logger),
    settings,
    taskReadModel: clickhouseTaskReadModel(options.clickhouse),
    taskReadModelWriter: clickhouseTaskReadModelWriter(adapters.clickhouse),
    pointsSink: createPointsSink(adapters.clickhouse, 'points', options.pointsQuorum),
    startRetry: {},
  };
}
