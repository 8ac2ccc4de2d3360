import type { ClickHouseClient, ClickHouseOptions } from '@meridian/clickhouse';
import type { KafkaEventLog, Topics } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';

/** What replay (rebuilds, swaps, the rebuild task) runs on: composed by the cli's main.ts. */
export type ReplayDeps = {
  /** The log: replay reads ranges of it with consumers of its own (log.kafka, log.admin). */
  readonly log: KafkaEventLog;
  readonly topics: Topics;
  readonly topicPrefix: string;
  readonly clickhouse: ClickHouseClient;
  readonly clickhouseOptions: ClickHouseOptions;
  /** Rows per insert into a generation (MERIDIAN_PROJECTOR_BATCH_ROWS). */
  readonly projectorBatchRows: number;
  readonly logger: Logger;
  /** Makes the topics exist. */
  prepareTopics(): Promise<void>;
};
