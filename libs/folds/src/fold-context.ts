import type { SnapshotStore } from '@meridian/domain';
import type { KafkaEventLog, Topics } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import type { UntilDoneOptions } from '@meridian/runtime';

/** The bounds and cadences of the folds (main.ts maps them from the settings). */
export type FoldLimits = {
  /** How long a fold waits for the newest snapshot to read (MERIDIAN_READY_TIMEOUT_MS). */
  readonly readyTimeoutMs: number;
  /** How long a command waits for the log's acknowledgement (MERIDIAN_KAFKA_ACK_TIMEOUT_MS). */
  readonly ackTimeoutMs: number;
  readonly snapshotEveryEvents: number;
  readonly snapshotMinIntervalMs: number;
  readonly snapshotKeep: number;
  /** How often the tasks fold lets go of finished tasks the read model covers (MERIDIAN_TASK_RELEASE_INTERVAL_MS). */
  readonly taskReleaseIntervalMs: number;
};

/** What the folds of a process (accounts, tasks) are built on: composed once in main.ts. */
export type FoldContext = {
  readonly log: KafkaEventLog;
  readonly snapshots: (topic: string) => SnapshotStore;
  readonly topics: Topics;
  /** Prefixes the folds' own consumer groups (the topic prefix). */
  readonly groupPrefix: string;
  readonly logger: Logger;
  /** How start-up work retries: servers wait, a CLI gives up. */
  readonly startRetry: UntilDoneOptions;
  readonly limits: FoldLimits;
};
