import type { LogRanges, BlobReferences, FileReadModel, FileReadModelWriter, TaskReadModel, TaskReadModelWriter } from '@meridian/domain';
import type { ArchiveObjects, ArchiverLog, ConsumerGroups, Topics, TrimLog } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import type { FoldContext } from '@meridian/folds';
import type { UntilDoneOptions } from '@meridian/runtime';
import type { BlobStore } from './blob-store.ts';
import type { EventLog } from './event-log.ts';
import type { PointsDeletion, PointsSink, PointsStages, Resolution, SealPassStats } from '@meridian/clickhouse';
import type { IngestOptions } from './options.ts';

/** The adapters and options the worker runs on, composed in compose.ts. */
export type IngestDeps = {
  /** Each component's options, compiled once from the settings (options.ts): the worker hands each its own. */
  readonly options: IngestOptions;
  readonly logger: Logger;
  readonly topics: Topics;
  readonly groups: ConsumerGroups;
  readonly log: EventLog;
  readonly blobs: BlobStore;
  /** What the accounts and tasks folds are built on. */
  readonly folds: FoldContext;
  readonly taskReadModel: TaskReadModel;
  readonly taskReadModelWriter: TaskReadModelWriter;
  readonly fileReadModel: FileReadModel;
  readonly fileReadModelWriter: FileReadModelWriter;
  /** What the blob collector asks the files read model (which blobs live files reference) and where it records its sweep. */
  readonly blobReferences: BlobReferences;
  /** The live points table's exactly-once sink. */
  readonly pointsSink: PointsSink;
  /** The live points table's stages: staged uploads' shares, moved in at their seals. */
  readonly pointsStages: PointsStages;
  /** Applies a deletion's marker to the live points table and its catalog, and records it in the position. */
  readonly deletePoints: (deletion: PointsDeletion) => Promise<void>;
  /** The seal pass of the live rollups, at most this many buckets per resolution a run (it remembers where it stopped). */
  readonly sealRollups: (maxBuckets: number, resolutions: readonly Resolution[]) => { run(signal?: AbortSignal): Promise<SealPassStats[]> };
  /**
   * What retention reads of ClickHouse: the catalog's metrics with their first timestamps, the
   * points older than a cutoff, and the partitions in which a deletion's marker has been applied.
   */
  readonly retentionQueries: {
    catalog(): Promise<Map<string, number>>;
    countOlder(metrics: readonly string[], cutoff: number): Promise<number>;
    appliedPartitions(taskIds: readonly string[]): Promise<Map<string, Set<number>>>;
  };
  /**
   * The points topic's archive: its objects; the log as the archiver reads and trims it; and the
   * log's history as archive plus brokers, for whatever reads old offsets (a staged upload's refill).
   */
  readonly archive: {
    readonly objects: ArchiveObjects;
    readonly log: TrimLog & ArchiverLog;
    readonly history: Pick<LogRanges, 'readRanges'>;
  };
  /** How start-up work (running a consumer) retries. */
  readonly startRetry: UntilDoneOptions;
};
