import type { AdapterOptions, Settings } from '@meridian/config';
import {
  applyDeletion,
  catalogFirsts,
  deletionAppliedPartitions,
  clickhouseBlobReferences,
  countOlder,
  clickhouseFileReadModel,
  clickhouseFileReadModelWriter,
  clickhouseTaskReadModel,
  clickhouseTaskReadModelWriter,
  createPointsSink,
  createPointsStages,
  createSealPass,
  LIVE_DELETION_TARGETS,
  LIVE_FILE_TABLES,
  LIVE_STAGE_TARGETS,
  LIVE_TASK_TABLES,
} from '@meridian/clickhouse';
import type { Logger } from '@meridian/observability';
import { archivedLog, archiveObjects, sharedServices, type Adapters } from '@meridian/platform';
import { topicsFor } from '@meridian/kafka';
import type { IngestDeps } from './ingest-deps.ts';
import { ingestOptions } from './options.ts';

/** The worker's dependencies over the process's adapters (main.ts; tests start the worker the same way). */
export function composeIngest(settings: Settings, logger: Logger, adapters: Adapters, options: AdapterOptions): IngestDeps {
  return {
    ...sharedServices(adapters, options, logger),
    options: ingestOptions(settings),
    // On a cluster the read models write and read under the points sink's quorum (docs/operating/cluster.md: exactly-once with replicas).
    taskReadModel: clickhouseTaskReadModel(options.clickhouse, LIVE_TASK_TABLES, options.pointsQuorum),
    taskReadModelWriter: clickhouseTaskReadModelWriter(adapters.clickhouse, LIVE_TASK_TABLES, options.pointsQuorum),
    fileReadModel: clickhouseFileReadModel(options.clickhouse, LIVE_FILE_TABLES, options.pointsQuorum),
    fileReadModelWriter: clickhouseFileReadModelWriter(adapters.clickhouse, LIVE_FILE_TABLES, options.pointsQuorum),
    blobReferences: clickhouseBlobReferences(options.clickhouse, adapters.clickhouse, LIVE_FILE_TABLES, options.pointsQuorum),
    pointsSink: createPointsSink(adapters.clickhouse, 'points', { quorum: options.pointsQuorum, sealsTable: 'points_seals' }),
    deletePoints: (deletion) => applyDeletion(adapters.clickhouse, LIVE_DELETION_TARGETS, deletion),
    pointsStages: createPointsStages(adapters.clickhouse, LIVE_STAGE_TARGETS, { insertWaitMs: settings.MERIDIAN_STAGE_INSERT_WAIT_MS }),
    sealRollups: (maxBuckets, resolutions) => createSealPass(options.clickhouse, { maxBuckets, resolutions }),
    retentionQueries: {
      catalog: () => catalogFirsts(adapters.clickhouse),
      countOlder: (metrics, cutoff) => countOlder(adapters.clickhouse, metrics, cutoff),
      appliedPartitions: (taskIds) => deletionAppliedPartitions(adapters.clickhouse, taskIds),
    },
    archive: { objects: archiveObjects(adapters.blobs), log: adapters.log, history: archivedLog(adapters, topicsFor(options.topicPrefix)) },
    startRetry: {},
  };
}
