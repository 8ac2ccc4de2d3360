import type { Settings } from '@meridian/config';

/** The command consumer's options, compiled once at start (each field names its setting and default). */
export type CommandConsumerOptions = {
  /** Starts of a command that ended without an outcome before its task fails (MERIDIAN_MAX_COMMAND_STARTS, 3). */
  readonly maxStarts: number;
  /** Most small uploads of one tasks partition run together in one transaction (MERIDIAN_UPLOAD_GROUP_MAX, 8). */
  readonly groupMax: number;
  /** The consumer group's session timeout (KAFKA_SESSION_TIMEOUT_MS, 10000). */
  readonly sessionTimeoutMs: number;
  /** Tasks partitions consumed at once (KAFKA_TASKS_PARTITIONS, 3). */
  readonly partitionsConsumedConcurrently: number;
  /**
   * Longest the group's committed offset lags what is dealt with (OffsetCommits): at most one plain
   * OffsetCommit an interval. Not a setting: 1 s; a test lengthens it to place a commit in a run.
   */
  readonly commitIntervalMs: number;
};

export function commandConsumerOptions(settings: Settings): CommandConsumerOptions {
  return {
    maxStarts: settings.MERIDIAN_MAX_COMMAND_STARTS,
    groupMax: settings.MERIDIAN_UPLOAD_GROUP_MAX,
    sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS,
    partitionsConsumedConcurrently: settings.KAFKA_TASKS_PARTITIONS,
    commitIntervalMs: 1000,
  };
}
