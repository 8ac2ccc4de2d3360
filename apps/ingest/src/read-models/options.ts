import type { Settings } from '@meridian/config';

const DAY_MS = 86_400_000;

/** What the tasks and files read models' projectors share, compiled once at start. */
export type ReadModelOptions = {
  /** The consumer group's session timeout (KAFKA_SESSION_TIMEOUT_MS, 10000). */
  readonly sessionTimeoutMs: number;
  /** How long positions past transaction markers are gathered before they are written (MERIDIAN_READ_MODEL_MARKER_FLUSH_MS, 100). */
  readonly markerFlushMs: number;
};

/** The tasks read model's projector: the common options and the expiry of finished tasks. */
export type TasksReadModelOptions = ReadModelOptions & {
  /** How long a finished task stays after its last change (MERIDIAN_TASK_RETENTION_DAYS, 30 days). */
  readonly retentionMs: number;
  /** The pause between two removals of expired tasks (MERIDIAN_TASK_RETENTION_INTERVAL_MS, 3600000). */
  readonly expiryIntervalMs: number;
};

export function readModelOptions(settings: Settings): ReadModelOptions {
  return { sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS, markerFlushMs: settings.MERIDIAN_READ_MODEL_MARKER_FLUSH_MS };
}

export function tasksReadModelOptions(settings: Settings): TasksReadModelOptions {
  return {
    ...readModelOptions(settings),
    retentionMs: settings.MERIDIAN_TASK_RETENTION_DAYS * DAY_MS,
    expiryIntervalMs: settings.MERIDIAN_TASK_RETENTION_INTERVAL_MS,
  };
}
