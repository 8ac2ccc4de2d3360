import type { Pattern } from '../downloads/params.ts';

/**
 * A deletion of points (tasks topic): who asked, when, the selection and the reason, with the
 * metric names it resolved to and the points partitions its markers went to. It arrives
 * decided, as a push does: its task waits only for every listed partition to apply its marker.
 */
export type MetricsDeleted = {
  readonly type: 'MetricsDeleted';
  readonly task_id: string;
  readonly user_name: string;
  readonly at: number;
  readonly reason: string;
  readonly pattern: Pattern;
  /** The selection's metrics text, as the request gave it. */
  readonly selection: string;
  /** Inclusive bounds, epoch milliseconds. */
  readonly from_ms: number;
  readonly to_ms: number;
  readonly metrics: readonly string[];
  /** Points selected when the deletion was accepted. */
  readonly points: number;
  readonly partitions: readonly number[];
};

/**
 * The marker of a deletion in one points partition: the points of `metrics` in [from_ms, to_ms]
 * projected before it (lower offsets of this partition) are deleted, the ones after it kept.
 * A metric lives in one points partition (its name is the key), so a marker names only its own.
 */
export type PointsDeleted = {
  readonly type: 'PointsDeleted';
  readonly task_id: string;
  readonly metrics: readonly string[];
  readonly from_ms: number;
  readonly to_ms: number;
  /**
   * Whether the rollups follow (v2): a user's deletion takes the deleted points out of the 1m and
   * 1h buckets it overlaps; retention's leaves the rollups whole (they outlive the raw points).
   * A v1 marker reads as false: rollups were left alone when it was applied, and a replay does the same.
   */
  readonly rollups: boolean;
};
