import type { GroupConsumer, GroupConsumerOptions, LogRanges, LogWriter, TransactionalLog } from '@meridian/domain';
import type { ConsumerWatch } from '@meridian/kafka';

/** A group consumer whose joins and crashes the worker's health follows. */
export interface WatchedConsumer extends GroupConsumer {
  watch(name: string): ConsumerWatch;
}

/** A transactional writer the worker opens per input partition and closes at stop. */
export interface PartitionWriter extends TransactionalLog {
  /** Connects (fencing a predecessor's open transaction with the same id, which is settled first). */
  connect(): Promise<void>;
  /** How many times its producer was replaced after a transaction that did not end cleanly. */
  readonly replaced: number;
  disconnect(): Promise<void>;
}

/**
 * The event log as the ingest worker uses it (implemented by libs/kafka's KafkaEventLog):
 * plain appends, transactions that also move a consumer group, group consumers, and ranges read
 * by offset (a staged upload's share, read again when its stage must be refilled).
 */
export interface EventLog extends Pick<LogRanges, 'readRanges'> {
  /** The process's idempotent writer, connected on first use. */
  writer(): Promise<LogWriter>;
  transactional(transactionalId: string): PartitionWriter;
  consumer(options: GroupConsumerOptions): WatchedConsumer;
  /** Per partition of `topic`, the offset its next record will take: the partitions the broker has. */
  endOffsets(topic: string): Promise<Map<number, number>>;
  /** Whether the group has members and every one advertises `capability` (GroupConsumerOptions.advertise); false during a rebalance. */
  groupAdvertises(groupId: string, capability: string): Promise<boolean>;
}
