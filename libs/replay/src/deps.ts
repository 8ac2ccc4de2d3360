import type { ClickHouseClient, ClickHouseOptions } from '@meridian/clickhouse';
import type { LogRanges, LogWriter } from '@meridian/domain';
import type { Topics } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';

/** The log as replay uses it: read by ranges, and appended to (the rebuild task's events). KafkaEventLog implements it. */
export type ReplayLog = LogRanges & { writer(): Promise<LogWriter> };

/** What replay (rebuilds, swaps, the rebuild task) runs on: composed by the cli's main.ts. */
export type ReplayDeps = {
  readonly log: ReplayLog;
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
