import type { Settings } from '@meridian/config';
import type { BatchBounds } from '@meridian/domain';
import type { UploadLimits } from './limits.ts';

/** How one upload runs (upload-commands.ts), compiled once at start. */
export type UploadRunOptions = {
  /** Where a point-batch event is cut: its points (MERIDIAN_POINT_BATCH_SIZE, 50000) and bytes (MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION). */
  readonly batch: BatchBounds;
  /** Most point-batch bytes per points partition in one produce request (MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION, 921600). */
  readonly sendBytesPerPartition: number;
  /** Most point-batch bytes in one produce request (MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST, 8 MiB). */
  readonly sendBytesPerRequest: number;
  /** Most points the upload decider holds before it must hand a batch over: eight batches. */
  readonly maxBufferedPoints: number;
  /** What one upload may make the worker decompress, hold and spend in time (limits.ts). */
  readonly limits: UploadLimits;
  /** Runs of one upload that stop on storage or network trouble before its task fails (MERIDIAN_UPLOAD_ATTEMPTS, 5). */
  readonly attempts: number;
  /** Most rows per staging insert (MERIDIAN_PROJECTOR_BATCH_ROWS, 500000, as the projector's). */
  readonly stageBatchRows: number;
  /** Longest wait for the staging inserts before the commit (MERIDIAN_STAGE_FINISH_TIMEOUT_MS, 30000). */
  readonly stageFinishTimeoutMs: number;
};

/** The upload handler's options: how a run goes, and how the worker composes it (staging, the batches' encoding). */
export type UploadOptions = UploadRunOptions & {
  /**
   * Staged uploads (MERIDIAN_UPLOAD_STAGING, auto), resolved: auto stages nothing into a
   * replicated points table (CLICKHOUSE_CLUSTER set: an ATTACH there reaches the other replicas
   * outside the insert quorum), so it is off there.
   */
  readonly staging: 'on' | 'off' | 'auto';
  /** Uploads smaller than this are never staged (MERIDIAN_STAGE_MIN_BYTES, 16 MiB). */
  readonly stageMinBytes: number;
  /** Point batches written with their timestamps as differences, PointBatch v4 (MERIDIAN_POINT_BATCH_DELTAS, true). */
  readonly pointBatchDeltas: boolean;
  /** Point batches written packed by series, PointBatch v5 (MERIDIAN_POINT_BATCH_PACKED, true). */
  readonly pointBatchPacked: boolean;
};

export function uploadOptions(settings: Settings): UploadOptions {
  return {
    batch: { points: settings.MERIDIAN_POINT_BATCH_SIZE, bytes: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION },
    sendBytesPerPartition: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION,
    sendBytesPerRequest: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST,
    maxBufferedPoints: settings.MERIDIAN_POINT_BATCH_SIZE * 8,
    limits: {
      maxDecompressedBytes: settings.MERIDIAN_MAX_DECOMPRESSED_BYTES,
      maxExpansionRatio: settings.MERIDIAN_MAX_EXPANSION_RATIO,
      maxLineLength: settings.MERIDIAN_MAX_LINE_BYTES,
      maxColumns: settings.MERIDIAN_MAX_COLUMNS,
      maxJsonDocumentLength: settings.MERIDIAN_MAX_JSON_DOCUMENT_BYTES,
      timeBudgetMs: settings.MERIDIAN_UPLOAD_TIME_BUDGET_MS,
    },
    attempts: settings.MERIDIAN_UPLOAD_ATTEMPTS,
    stageBatchRows: settings.MERIDIAN_PROJECTOR_BATCH_ROWS,
    stageFinishTimeoutMs: settings.MERIDIAN_STAGE_FINISH_TIMEOUT_MS,
    staging: settings.MERIDIAN_UPLOAD_STAGING === 'auto' && settings.CLICKHOUSE_CLUSTER !== '' ? 'off' : settings.MERIDIAN_UPLOAD_STAGING,
    stageMinBytes: settings.MERIDIAN_STAGE_MIN_BYTES,
    pointBatchDeltas: settings.MERIDIAN_POINT_BATCH_DELTAS,
    pointBatchPacked: settings.MERIDIAN_POINT_BATCH_PACKED,
  };
}
