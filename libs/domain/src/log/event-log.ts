// The event log as the apps and the folds use it (implemented by libs/kafka's KafkaEventLog).
// Shaped after the records kafkajs takes, so an adapter passes them through unchanged.

/** Where a record sits in its topic: enough to wait until a follower has applied it. */
export type Position = { readonly partition: number; readonly offset: number };

/** Where a consumed record sits, topic included (the command a handler is running). */
export type ConsumedPosition = { readonly topic: string; readonly partition: number; readonly offset: number };

export type LogMessage = {
  readonly key: Buffer | string | null;
  readonly value: Buffer | null;
  readonly headers?: Readonly<Record<string, string>>;
  /** Written to this partition rather than the key's (a seal goes to every partition an upload touched). */
  readonly partition?: number;
};

/**
 * Records for one topic. Every send is acknowledged by all in-sync replicas: `acks: -1` is the
 * only value, spelled at call sites that say so.
 */
export type LogRecord = { readonly topic: string; readonly acks?: -1; readonly messages: LogMessage[] };

/** What the log acknowledged for a send: per partition written, the offset of its first record. */
export type Acknowledgement = { readonly partition: number; readonly baseOffset?: string };

/** Appends records; resolves once every in-sync replica has them. */
export interface LogWriter {
  send(record: LogRecord): Promise<Acknowledgement[]>;
}

/** What the log acknowledged for one topic's records of a request of several topics. */
export type TopicAcknowledgement = Acknowledgement & { readonly topic: string };

/** Sends and a consumer group's offsets, committed together or not at all. */
export interface LogTransaction extends LogWriter {
  /**
   * Records of several topics in one produce request: the transaction adds their partitions in
   * one AddPartitionsToTxn, where one send per topic costs a round trip each. A topic appears
   * once in `records`; its messages keep their order within each partition.
   */
  sendAll(records: readonly LogRecord[]): Promise<TopicAcknowledgement[]>;
  /** Moves the group past `consumed`, as part of this transaction. */
  commitConsumed(groupId: string, consumed: ConsumedPosition): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
  isActive(): boolean;
}

/** A writer whose sends go in transactions (one per input partition: a restart fences its predecessor's). */
export interface TransactionalLog {
  transaction(): Promise<LogTransaction>;
}

/** A header's value as a consumer reads it (kafkajs: a Buffer; an array when the name repeats). */
export type HeaderValue = Buffer | string | ReadonlyArray<Buffer | string> | undefined;

/** A consumed record. */
export type ConsumedMessage = {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Readonly<Record<string, HeaderValue>>;
};

/**
 * Offsets per topic and partition, as a consumer resolves and commits them. kafkajs's
 * uncommittedOffsets() gives each partition as a string (it reads them off an object's keys),
 * though its own types say a number.
 */
export type TopicOffsets = {
  readonly topics: ReadonlyArray<{
    readonly topic: string;
    readonly partitions: ReadonlyArray<{ readonly partition: number | string; readonly offset: string }>;
  }>;
};

/** One fetched batch of a partition, with the consumer's controls while it is handled. */
export type BatchPayload = {
  readonly batch: {
    readonly topic: string;
    readonly partition: number;
    readonly messages: readonly ConsumedMessage[];
    lastOffset(): string;
    /**
     * The last batch of its fetch handed to a handler (patches/kafkajs: a fetch's batches, one
     * per partition, are handled one after the other). Absent: not known, take it as the last.
     */
    readonly lastOfFetch?: boolean;
  };
  resolveOffset(offset: string): void;
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  /** The partition was taken from this member by a rebalance since the batch was fetched. */
  isStale(): boolean;
  uncommittedOffsets(): TopicOffsets;
  commitOffsetsIfNecessary(offsets?: TopicOffsets): Promise<void>;
};

/** One consumed record, with the heartbeat that keeps the group membership alive while it runs. */
export type MessagePayload = { readonly topic: string; readonly partition: number; readonly message: ConsumedMessage; heartbeat(): Promise<void> };

/** How a group consumer runs: by batch (projectors) or by message (commands). */
export type ConsumerRun = {
  readonly autoCommit?: boolean;
  /**
   * With autoCommit off: commitOffsetsIfNecessary() without offsets commits what is resolved once
   * this many ms have passed since the last commit, and does nothing before.
   */
  readonly autoCommitInterval?: number;
  readonly eachBatchAutoResolve?: boolean;
  /** Partitions handled at once (each in order). */
  readonly partitionsConsumedConcurrently?: number;
  readonly eachBatch?: (payload: BatchPayload) => Promise<void>;
  readonly eachMessage?: (payload: MessagePayload) => Promise<void>;
};

export type GroupConsumerOptions = {
  readonly groupId: string;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs?: number;
  readonly maxWaitTimeMs: number;
  /** Bytes a fetch waits for, up to maxWaitTimeMs, before it answers (1 by default: at once). */
  readonly minBytes?: number;
  readonly maxBytesPerPartition?: number;
  readonly maxBytes?: number;
  /** False: only committed transactions are read (the default, as for every consumer here). */
  readonly readUncommitted?: boolean;
  /** What this member's release can do, in its group membership, for other processes to ask of the group (EventLog.groupAdvertises in ingest). */
  readonly advertise?: readonly string[];
};

/** A processed fetch's end, markers included (a fetch of transaction markers alone reaches no handler). */
export type BatchEnd = { readonly topic: string; readonly partition: number; readonly lastOffset: string; readonly batchSize: number };

/** A member of a consumer group: one topic, offsets committed by the handler. */
export interface GroupConsumer {
  /** After each join of the group: the partitions assigned, per topic. */
  onJoin(listener: (join: { readonly groupId: string; readonly assignment: Readonly<Record<string, readonly number[]>> }) => void): void;
  onCrash(listener: (crash: { readonly error: unknown; readonly restart: boolean }) => void): void;
  onBatchEnd(listener: (end: BatchEnd) => void): void;
  /** Connects, subscribes to `topic` from its beginning and runs; a failed start disconnects, so it may be called again. */
  run(topic: string, config: ConsumerRun): Promise<void>;
  stop(): Promise<void>;
}

/** Per partition, an offset. */
export type Offsets = Map<number, number>;

/** Offsets [start, end) of one partition of one topic to read. */
export type PartitionRange = { readonly topic: string; readonly partition: number; readonly start: number; readonly end: number };

/** A record read from a range: where it sits, when it was written (ms, as text), its bytes. */
export type RangeMessage = ConsumedMessage & { readonly timestamp: string };

/** Messages of one partition, in offset order, all inside its range; `done` once the range is read. */
export type RangeBatch = { readonly topic: string; readonly partition: number; readonly messages: readonly RangeMessage[]; readonly done: boolean };

export type RangeReadOptions = {
  /** A consumer group of this read's own, deleted after. */
  readonly groupId: string;
  /**
   * true: partitions one after the other, in the order of the ranges (a deterministic output
   * order, for exports); false: every partition at once (rebuilds).
   */
  readonly sequential: boolean;
  readonly signal?: AbortSignal;
  readonly maxBytesPerPartition?: number;
  readonly maxBytes?: number;
};

/**
 * The log read by offset ranges, for what replays history (rebuilds, swaps, exports): where
 * each partition starts and ends, fixed ranges read read-committed, and a consumer group made
 * to rejoin.
 */
export interface LogRanges {
  /** The first and the end offset (read-committed: the last stable offset) of every partition of a topic. */
  offsets(topic: string): Promise<{ low: Offsets; end: Offsets }>;
  /** Per partition, the first offset whose record timestamp is at or after `ms` (the end offset when none is). */
  offsetsAtTime(topic: string, ms: number): Promise<Offsets>;
  /** Reads the ranges as an async iterator with backpressure (the read waits while the caller works on a batch). */
  readRanges(ranges: readonly PartitionRange[], options: RangeReadOptions): AsyncGenerator<RangeBatch>;
  /** Makes every member of a consumer group rejoin it (a member of ours joins and leaves); rejects after `timeoutMs`. */
  nudgeGroup(groupId: string, topic: string, timeoutMs?: number): Promise<void>;
}
