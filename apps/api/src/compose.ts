import type { AdapterOptions, Settings } from '@meridian/config';
import {
  clickhouseFileReadModel,
  clickhouseMetricCatalog,
  clickhouseTaskReadModel,
  LIVE_FILE_TABLES,
  LIVE_TASK_TABLES,
  type NameMatch,
} from '@meridian/clickhouse';
import type { Logger } from '@meridian/observability';
import { archivedLog, archiveObjects, sharedServices, type Adapters, type Platform } from '@meridian/platform';
import { topicsFor } from '@meridian/kafka';
import type { ApiServices } from './api-services.ts';
import { sharedRead, sharedReadBy } from './catalog/shared-read.ts';

/** The api's services over the process's adapters (main.ts; tests build the api the same way). */
export function composeApi(settings: Settings, logger: Logger, adapters: Adapters, options: AdapterOptions, platform: Platform): ApiServices {
  return {
    ...sharedServices(adapters, options, logger),
    settings,
    clickhouseOptions: options.clickhouse,
    catalog: catalogOf(options),
    // On a cluster the read models read under the points sink's quorum (docs/operating/cluster.md: exactly-once with replicas).
    taskReadModel: clickhouseTaskReadModel(options.clickhouse, LIVE_TASK_TABLES, options.pointsQuorum),
    fileReadModel: clickhouseFileReadModel(options.clickhouse, LIVE_FILE_TABLES, options.pointsQuorum),
    probes: platform.probes,
    history: archivedLog(adapters, topicsFor(options.topicPrefix)),
    archiveObjects: archiveObjects(adapters.blobs),
  };
}

/** The catalog's reads; the concurrent reads of the whole list, and of one pattern, shared (catalog/shared-read.ts). */
function catalogOf(options: AdapterOptions): ApiServices['catalog'] {
  const catalog = clickhouseMetricCatalog(options.clickhouse);
  return {
    ...catalog,
    list: sharedRead(() => catalog.list()),
    matching: sharedReadBy(
      (match: NameMatch, text: string) => catalog.matching(match, text),
      (match, text) => `${match}\u0000${text}`,
    ),
  };
}
