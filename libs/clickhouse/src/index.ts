export { createClickHouse, ensureDatabase, pingClickHouse, quoteIdentifier, type ClickHouseClient, type ClickHouseOptions } from './client.ts';
export {
  capabilities,
  deduplicatedInsertSettings,
  parseVersion,
  quorumReadSettings,
  serverCapabilities,
  synchronousInsertSettings,
  type Capabilities,
  type InsertQuorum,
} from './capabilities.ts';
export {
  migrate,
  migrateServers,
  readMigrations,
  statementsFor,
  replicated,
  replicationOf,
  MIGRATIONS_DIR,
  type Migration,
  type Replication,
} from './migrate.ts';
export {
  cancelQueries,
  cancelQueryPart,
  decodeCursor,
  encodeCursor,
  nameOf,
  nativePointColumns,
  planDownload,
  rowsInWindow,
  streamDownload,
  type ConnOptions,
  type DownloadCursor,
  type DownloadFormat,
  type DownloadPlan,
  type DownloadRequest,
  type DownloadStream,
  type PlanOptions,
  type PointColumns,
  type StreamOptions,
} from './download/index.ts';
export { clickhouseMetricCatalog, type CatalogEntry, type NameMatch } from './catalog.ts';
export { completeSeriesLabels, seriesByLabels, seriesByLabelsSql, type LabelEquality } from './series-labels.ts';
export { clickhouseTaskReadModel, clickhouseTaskReadModelWriter, LIVE_TASK_TABLES, type TaskTables } from './tasks/read-model.ts';
export { queryText } from './download/http.ts';
export { countPoints } from './points/count.ts';
export { clickhouseFileReadModel, clickhouseFileReadModelWriter, LIVE_FILE_TABLES, type FileTables } from './files/read-model.ts';
export { clickhouseBlobReferences } from './files/blob-references.ts';
export { BlockBuffer, encodePointsBlock, INSERT_POINTS_SQL, insertPointsSql, insertToken, STAGE_BLOCK_COLUMNS } from './points/native-block.ts';
export { createPointsSink, refusedBeforeWriting, type BatchPosition, type PointsSink } from './points/sink.ts';
export {
  createPointsStages,
  LIVE_STAGE_TARGETS,
  type Fence,
  type PointsStages,
  type PointsStagesOptions,
  type SealOutcome,
  type StageTargets,
  type StagedShare,
} from './points/stage.ts';
export { untilMutationsDone } from './server-work.ts';
export { applyDeletion, deletionWhere, deleteRowsSql, hexString, LIVE_DELETION_TARGETS, type DeletionTargets, type PointsDeletion } from './points/delete.ts';
export { bucketsWhere } from './rollups/follow-deletion.ts';
export { parseSeries, readSeries, seriesFromRollupSql, seriesRollup, seriesSql, type SeriesColumns, type SeriesRequest } from './series.ts';
export { readSamples, samplesSql, streamSamples, type SamplesRequest, type SeriesSamples, type SeriesView } from './promql/samples.ts';
export { catalogFirsts, countOlder, deletionAppliedPartitions } from './points/retention.ts';
export { readSeriesBuckets, resolutionOf, type SeriesBucketsRequest } from './rollups/series-buckets.ts';
export { checkChunk, createSealPass, sealCandidates, writeSeals, type CheckedChunk, type SealPassOptions, type SealPassStats } from './rollups/seal-pass.ts';
export { EVERY_PERIOD, MARK_PERIOD_MS, MARKS } from './rollups/marks-sql.ts';
export { markDeletion, voidEverySeal } from './rollups/marks.ts';
export { SEALED } from './rollups/sealed-sql.ts';
export { readRollupPage, parseRollupRows, type RollupPage, type RollupRequest, type RollupRow } from './rollups/read.ts';
export { bucketRange, dedupedBucketsSql, rollupPageSql, rollupStatesSql, ROLLUPS, type Resolution, type RollupCursor } from './rollups/sql.ts';
