import type { Settings } from '@meridian/config';
import type { ConnOptions } from '@meridian/clickhouse';
import type { FileReadModel, LogRanges, TaskReadModel } from '@meridian/domain';
import type { ArchiveObjects, ConsumerGroups, KafkaEventLog, Topics } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import type { FoldContext } from '@meridian/folds';
import type { Probe } from '@meridian/runtime';
import type { BlobStore } from './blob-store.ts';
import type { MetricCatalog } from './catalog/routes.ts';

/** The adapters and settings the api is built on (buildApi), composed in main.ts. */
export type ApiServices = {
  readonly settings: Settings;
  readonly logger: Logger;
  readonly topics: Topics;
  /** The ingest worker's groups, whose lag /metrics reports. */
  readonly groups: ConsumerGroups;
  /** Appends commands and reports the ingest groups' lag. */
  readonly log: KafkaEventLog;
  /** The log's history as the events export reads it: the points archive, then the brokers. */
  readonly history: LogRanges;
  /** The points archive's objects, whose last pass's status /metrics reports as the archive's lag. */
  readonly archiveObjects: ArchiveObjects;
  readonly blobs: BlobStore;
  /** What the accounts and tasks folds are built on. */
  readonly folds: FoldContext;
  /** Downloads read ClickHouse over HTTP with these. */
  readonly clickhouseOptions: ConnOptions;
  readonly catalog: MetricCatalog;
  readonly taskReadModel: TaskReadModel;
  /** The file catalog (the api holds no file in memory). */
  readonly fileReadModel: FileReadModel;
  /** The dependencies' readiness probes (kafka, clickhouse, minio). */
  readonly probes: readonly Probe[];
};
