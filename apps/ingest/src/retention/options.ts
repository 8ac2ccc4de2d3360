import type { Settings } from '@meridian/config';

/** The retention runner's options, compiled once at start. */
export type RetentionOptions = {
  /** Starts the transactional id of the runner's deletion writer (MERIDIAN_TOPIC_PREFIX, `meridian.`). */
  readonly writerIdPrefix: string;
  /** Longest a deletion waits for Kafka's acknowledgement (MERIDIAN_KAFKA_ACK_TIMEOUT_MS, 10000). */
  readonly ackTimeoutMs: number;
  /** The pause between two retention passes (MERIDIAN_POINTS_RETENTION_INTERVAL_MS, 3600000). */
  readonly intervalMs: number;
};

export function retentionOptions(settings: Settings): RetentionOptions {
  return {
    writerIdPrefix: `${settings.MERIDIAN_TOPIC_PREFIX}ingest-retention-`,
    ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
    intervalMs: settings.MERIDIAN_POINTS_RETENTION_INTERVAL_MS,
  };
}
