import type { MetricsUploadRequested, OnError } from '../uploads/events.ts';
import type { MetricsDeleted } from '../deletions/events.ts';
import type { FileDefinitionRequested, FileDefinitionSucceeded } from '../files/events.ts';

/** Task lifecycle events on the tasks topic, keyed by task_id, beside the commands that start tasks. */
export type RowError = { readonly row: number; readonly column: string; readonly reason: string };

/** A worker began a run of the task's command: written once per run, before any work. */
export type TaskStarted = { readonly type: 'TaskStarted'; readonly task_id: string; readonly at: number };
/**
 * A run ended without an outcome while its worker lived on (it lost the partition, or Kafka
 * failed under it): the command runs again, and that run's start was no crash.
 */
export type TaskReleased = { readonly type: 'TaskReleased'; readonly task_id: string; readonly at: number };
export type TaskProgress = { readonly type: 'TaskProgress'; readonly task_id: string; readonly rows_done: number; readonly at: number };
/** What parsing an upload decided: its counts, the first row errors, where its points went. */
export type UploadOutcome = {
  readonly rows_total: number;
  readonly points_accepted: number;
  readonly rows_rejected: number;
  readonly errors: readonly RowError[];
  readonly partitions: readonly number[];
  readonly metrics: readonly string[];
};
export type UploadParsed = { readonly type: 'UploadParsed'; readonly task_id: string; readonly at: number } & UploadOutcome;
/**
 * A push: a small upload decided in the api, the command and its outcome in one event, written in
 * one transaction with its point batches and their seals. No worker runs it; its task waits only
 * for the listed points partitions to be projected.
 */
export type MetricsPushed = {
  readonly type: 'MetricsPushed';
  readonly task_id: string;
  readonly user_name: string;
  /** Accepted at (epoch ms); every point's updated_at. */
  readonly at: number;
  readonly metric_name: string | null;
  readonly on_error: OnError;
  /** What was pushed: json_body, or a wire protocol's name. */
  readonly source: string;
  readonly payload_bytes: number;
  readonly payload_sha256: Buffer;
  readonly idempotency_key: string | null;
} & UploadOutcome;
export type UploadSegmentProjected = { readonly type: 'UploadSegmentProjected'; readonly task_id: string; readonly partition: number; readonly at: number };
export type TaskFailed = {
  readonly type: 'TaskFailed';
  readonly task_id: string;
  readonly reason: string;
  readonly rows_total: number;
  readonly rows_rejected: number;
  readonly errors: readonly RowError[];
  readonly at: number;
};

/** Command: rebuild a projection from the log (meridian replay rebuild); run by whoever wrote it. */
export type RebuildRequested = {
  readonly type: 'RebuildRequested';
  readonly task_id: string;
  readonly user_name: string;
  readonly at: number;
  readonly projection: string;
  readonly from: string | null;
  readonly to: string | null;
  readonly database: string | null;
  readonly swap: 'never' | 'always' | 'if_verified';
};
export type RebuildSucceeded = {
  readonly type: 'RebuildSucceeded';
  readonly task_id: string;
  /** null: rebuilt into a separate database. */
  readonly generation: number | null;
  readonly database: string;
  readonly table: string;
  readonly events: number;
  readonly points: number;
  /** null: there was no live table to verify against. */
  readonly verified: boolean | null;
  readonly swapped: boolean;
  readonly at: number;
};

export type TaskEvent =
  | MetricsUploadRequested
  | MetricsPushed
  | TaskStarted
  | TaskReleased
  | TaskProgress
  | UploadParsed
  | UploadSegmentProjected
  | TaskFailed
  | FileDefinitionRequested
  | FileDefinitionSucceeded
  | RebuildRequested
  | RebuildSucceeded
  | MetricsDeleted;

/** The events that create a task: commands a worker runs, and pushes, which arrive decided. */
export type TaskCommand = MetricsUploadRequested | MetricsPushed | FileDefinitionRequested | RebuildRequested | MetricsDeleted;
