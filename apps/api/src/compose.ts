import type { AdapterOptions, Settings } from '@meridian/config';
import { clickhouseMetricCatalog, clickhouseTaskReadModel } from '@meridian/clickhouse';
import type { Logger } from '@meridian/observability';
import { sharedServices, type Adapters, type Platform } from '@meridian/platform';
import type { ApiServices } from './api-services.ts';

/** The api's services over the process's adapters (main.ts; tests build the api the same way). */
export function composeApi(settings: Settings, logger: Logger, adapters: Adapters, options: AdapterOptions, platform: Platform): ApiServices {
  return {
    ...sharedServices(adapters, options, logger),
    settings,
    clickhouseOptions: options.clickhouse,
    catalog: clickhouseMetricCatalog(options.clickhouse),
    taskReadModel: clickhouseTaskReadModel(options.clickhouse),
    probes: platform.probes,
  };
}
