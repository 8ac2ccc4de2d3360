import type { PointsDeleted } from '../deletions/events.ts';
/** Upload command and the point facts it produces (schemas/<type>/v<N>.avsc). */
export type OnError = 'fail' | 'skip';
export type UploadSource = 'json_body' | 'file';

/** The command, on the tasks topic keyed by task_id: the task is queued from here. */
export type MetricsUploadRequested = {
  readonly type: 'MetricsUploadRequested';
  readonly task_id: string;
  readonly user_name: string;
  /** Accepted at (epoch ms); every point's updated_at. */
  readonly at: number;
  readonly metric_name: string | null;
  readonly on_error: OnError;
  readonly source: UploadSource;
  /**
   * The body itself: only in commands written before JSON bodies were staged (a replay of an
   * old log still runs them); null in new ones, so reading the tasks topic stays cheap.
   */
  readonly payload: Buffer | null;
  /** Where the body waits in the bucket (claim check, under the staging prefix). */
  readonly staged_object: string | null;
  readonly payload_bytes: number;
  readonly payload_sha256: Buffer;
  readonly idempotency_key: string | null;
};

/**
 * Points from one upload, as columns: of one metric (`metric_name`), or of several metrics of one
 * points partition (`names`, and each point's index among them in `name_index`; `metric_name` is
 * then empty). Points topic, keyed by a metric name of the batch.
 */
export type PointBatch = {
  readonly type: 'PointBatch';
  readonly task_id: string;
  readonly metric_name: string;
  readonly updated_at: number;
  readonly timestamps: number[];
  readonly values: number[];
  /** Absent or empty: every point is metric_name's. */
  readonly names?: readonly string[];
  readonly name_index?: readonly number[];
  /**
   * Absent or null: projected as read. Otherwise the attempt of a staged upload (16 hex digits):
   * the rows enter a points table only at that attempt's seal in this partition.
   */
  readonly stage?: string | null;
};

/** A staged upload's share of one points partition: its batches sit in [first_offset, the seal's offset). */
export type UploadStage = { readonly attempt: string; readonly first_offset: number; readonly batches: number };

/** Marker after the last batch of an upload in one points partition. */
export type UploadSealed = {
  readonly type: 'UploadSealed';
  readonly task_id: string;
  readonly points: number;
  /** Absent or null: the upload's batches in this partition were projected as read. */
  readonly stage?: UploadStage | null;
};

/**
 * Header of a staged PointBatch record, its value the batch's `stage`: a reader that only
 * needs to know the batch is staged (the live projector) skips it without decoding. The
 * Avro field is the truth; a record without the header is decoded.
 */
export const STAGE_HEADER = 'meridian-stage';

/**
 * What a points projector that reads staged uploads advertises in its consumer group. An upload
 * is staged under MERIDIAN_UPLOAD_STAGING=auto only while every projector advertises it: a
 * projector of an older release would send a staged batch to the dead-letter topic.
 */
export const READS_STAGED_UPLOADS = 'reads-staged-uploads-v1';

/** What the points topic holds: point batches, the seals of uploads, and the markers of deletions. */
export type PointsFact = PointBatch | UploadSealed | PointsDeleted;
