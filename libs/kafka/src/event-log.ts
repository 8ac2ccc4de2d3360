import type { Admin, Consumer, Kafka, KafkaJSDeleteGroupsError, Producer } from 'kafkajs';
import type {
  ConsumedPosition,
  ConsumerRun,
  GroupConsumer,
  GroupConsumerOptions,
  LogRanges,
  LogTransaction,
  LogWriter,
  Offsets,
  PartitionRange,
  RangeBatch,
  RangeReadOptions,
  TransactionalLog,
} from '@meridian/domain';
import type { EventLike } from '@meridian/events';
import { withTimeout } from '@meridian/observability';
import { createKafka, createProducer, ensureTopics, type KafkaOptions } from './client.ts';
import type { LogCompression } from './compression.ts';
import { advertisingAssigner, groupAdvertises } from './capabilities.ts';
import { ConsumerWatch } from './consumer-watch.ts';
import { TopicFollower, type FollowerOptions } from './follow.ts';
import { nudgeGroup, offsetsAtTime, readRanges, topicEnds, topicOffsets } from './range-reader.ts';
import { TransactionalProducer } from './transactional.ts';
import type { TopicMismatch, TopicSpec } from './topics.ts';

/** Connects once, on first use; a failed connect is tried again at the next use. */
function connectOnce(connect: () => Promise<void>): () => Promise<void> {
  let connected: Promise<void> | null = null;
  return () =>
    (connected ??= connect().catch((e: unknown) => {
      connected = null;
      throw e;
    }));
}

/**
 * A transactional producer behind the TransactionalLog port; connected before its first
 * transaction, and replaced after one that did not end cleanly (TransactionalProducer).
 */
export class KafkaTransactionalLog implements TransactionalLog {
  private readonly producer: TransactionalProducer;

  constructor(producer: TransactionalProducer) {
    this.producer = producer;
  }

  /** Connects (InitProducerId): fences a predecessor's open transaction with the same id, and settles it. */
  connect(): Promise<void> {
    return this.producer.ready();
  }

  /** How many times the producer was replaced after a transaction that did not end cleanly. */
  get replaced(): number {
    return this.producer.replaced;
  }

  async transaction(): Promise<LogTransaction> {
    const tx = await this.producer.transaction();
    return {
      send: (record) => tx.send(record),
      async sendAll(records) {
        const acks = await tx.sendBatch({ acks: -1, topicMessages: records.map(({ topic, messages }) => ({ topic, messages })) });
        return acks.map(({ topicName, partition, baseOffset }) => ({ topic: topicName, partition, ...(baseOffset === undefined ? {} : { baseOffset }) }));
      },
      async commitConsumed(groupId: string, at: ConsumedPosition) {
        await tx.sendOffsets({
          consumerGroupId: groupId,
          topics: [{ topic: at.topic, partitions: [{ partition: at.partition, offset: String(at.offset + 1) }] }],
        });
      },
      commit: () => tx.commit(),
      abort: () => tx.abort(),
      isActive: () => tx.isActive(),
    };
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect();
  }
}

/** A kafkajs consumer behind the GroupConsumer port, with its health watch. */
export class KafkaGroupConsumer implements GroupConsumer {
  private readonly consumer: Consumer;

  constructor(consumer: Consumer) {
    this.consumer = consumer;
  }

  /** Follows this consumer's joins and crashes for the worker's health (apps/ingest/src/health). */
  watch(name: string): ConsumerWatch {
    return new ConsumerWatch(name, this.consumer);
  }

  onJoin(listener: Parameters<GroupConsumer['onJoin']>[0]): void {
    this.consumer.on(this.consumer.events.GROUP_JOIN, (e) => listener({ groupId: e.payload.groupId, assignment: e.payload.memberAssignment }));
  }

  onCrash(listener: Parameters<GroupConsumer['onCrash']>[0]): void {
    this.consumer.on(this.consumer.events.CRASH, (e) => listener({ error: e.payload.error, restart: e.payload.restart }));
  }

  onBatchEnd(listener: Parameters<GroupConsumer['onBatchEnd']>[0]): void {
    this.consumer.on(this.consumer.events.END_BATCH_PROCESS, ({ payload }) => listener(payload));
  }

  async run(topic: string, config: ConsumerRun): Promise<void> {
    try {
      await this.consumer.connect();
      await this.consumer.subscribe({ topic, fromBeginning: true });
      await this.consumer.run(config);
    } catch (error) {
      await this.consumer.disconnect().catch(() => undefined);
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }
}

/**
 * The event log (Kafka): the one place the apps' log ports are implemented. It holds the
 * process's client, its admin and its idempotent producer, each connected on first use.
 */
export class KafkaEventLog implements LogRanges {
  /** For tests, which drive Kafka directly. */
  readonly kafka: Kafka;
  readonly admin: Admin;
  private readonly producer: Producer;
  private readonly compression: LogCompression | undefined;
  private readonly connectProducer: () => Promise<void>;
  /** Connects the admin client; the admin calls below do it first. */
  readonly connectAdmin: () => Promise<void>;
  /**
   * The readiness probe's own admin: kafkajs replaces a client's cached metadata with the topics
   * of its last metadata request, so a probe asking the process's admin for one topic would leave
   * the other topics' lookups without partitions until their next refresh.
   */
  private readonly probe: Admin;
  private readonly connectProbe: () => Promise<void>;

  constructor(options: KafkaOptions) {
    this.kafka = createKafka(options);
    this.admin = this.kafka.admin();
    this.compression = options.compression;
    this.producer = createProducer(this.kafka, { compression: this.compression });
    this.connectProducer = connectOnce(() => this.producer.connect());
    this.connectAdmin = connectOnce(() => this.admin.connect());
    this.probe = this.kafka.admin();
    this.connectProbe = connectOnce(() => this.probe.connect());
  }

  /** The process's idempotent producer (acks from all in-sync replicas), connected on first use. */
  async writer(): Promise<LogWriter> {
    await this.connectProducer();
    return this.producer;
  }

  /**
   * A transactional producer with this id: a new one with the same id fences an older one's open
   * transaction. `transactionTimeoutMs`: how long the broker lets a transaction stay open before it
   * aborts it (900 s by default, the broker's own ceiling); `firstRetryMs`: the wait before the first
   * retry of a retriable answer, doubling after (the client's 200 ms by default).
   */
  transactional(transactionalId: string, options: { transactionTimeoutMs?: number; firstRetryMs?: number } = {}): KafkaTransactionalLog {
    return new KafkaTransactionalLog(
      new TransactionalProducer(this.kafka, transactionalId, () => createProducer(this.kafka, { transactionalId, compression: this.compression, ...options })),
    );
  }

  consumer(options: GroupConsumerOptions): KafkaGroupConsumer {
    return new KafkaGroupConsumer(
      this.kafka.consumer({
        groupId: options.groupId,
        sessionTimeout: options.sessionTimeoutMs,
        maxWaitTimeInMs: options.maxWaitTimeMs,
        ...(options.minBytes === undefined ? {} : { minBytes: options.minBytes }),
        ...(options.heartbeatIntervalMs === undefined ? {} : { heartbeatInterval: options.heartbeatIntervalMs }),
        ...(options.maxBytesPerPartition === undefined ? {} : { maxBytesPerPartition: options.maxBytesPerPartition }),
        ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
        ...(options.readUncommitted === undefined ? {} : { readUncommitted: options.readUncommitted }),
        ...(options.advertise === undefined ? {} : { partitionAssigners: [advertisingAssigner(options.advertise)] }),
      }),
    );
  }

  /** Whether the group has members and every one advertises `capability` (capabilities.ts). */
  async groupAdvertises(groupId: string, capability: string): Promise<boolean> {
    await this.connectAdmin();
    return groupAdvertises(this.admin, groupId, capability);
  }

  /** Reads a topic into memory and keeps following it (folds: accounts, tasks). */
  follower<E extends EventLike>(options: Omit<FollowerOptions<E>, 'kafka' | 'admin'>): TopicFollower<E> {
    return new TopicFollower<E>({ ...options, kafka: this.kafka, admin: this.admin });
  }

  /** Per partition, the offset the next record will take (the high watermark a read-committed client sees). */
  async endOffsets(topic: string): Promise<Offsets> {
    await this.connectAdmin();
    return topicEnds(this.admin, topic);
  }

  async offsets(topic: string): Promise<{ low: Offsets; end: Offsets }> {
    await this.connectAdmin();
    return topicOffsets(this.admin, topic);
  }

  async offsetsAtTime(topic: string, ms: number): Promise<Offsets> {
    await this.connectAdmin();
    return offsetsAtTime(this.admin, topic, ms);
  }

  async *readRanges(ranges: readonly PartitionRange[], options: RangeReadOptions): AsyncGenerator<RangeBatch> {
    await this.connectAdmin();
    yield* readRanges(this.kafka, this.admin, ranges, options);
  }

  nudgeGroup(groupId: string, topic: string, timeoutMs?: number): Promise<void> {
    return nudgeGroup(this.kafka, groupId, topic, timeoutMs);
  }

  /** Per partition of `topic`, the records a consumer group has not committed yet. */
  async groupLag(groupId: string, topic: string): Promise<Array<{ partition: number; lag: number }>> {
    await this.connectAdmin();
    const [ends, [committed]] = await Promise.all([this.admin.fetchTopicOffsets(topic), this.admin.fetchOffsets({ groupId, topics: [topic] })]);
    const done = new Map((committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    return ends.map((e) => ({ partition: e.partition, lag: Math.max(0, Number(e.high) - Math.max(0, done.get(e.partition) ?? 0)) }));
  }

  /** The offsets a consumer group has committed on a topic; a partition it has none for is absent. */
  async committedOffsets(groupId: string, topic: string): Promise<Offsets> {
    await this.connectAdmin();
    const [committed] = await this.admin.fetchOffsets({ groupId, topics: [topic] });
    return new Map((committed?.partitions ?? []).filter((p) => Number(p.offset) >= 0).map((p) => [p.partition, Number(p.offset)]));
  }

  /**
   * Deletes the consumer groups named with `prefix` that have no member left (Kafka refuses to
   * delete one that has: a read still running keeps its group). Returns how many went.
   */
  async deleteIdleGroups(prefix: string): Promise<number> {
    await this.connectAdmin();
    const named = (await this.admin.listGroups()).groups.map((g) => g.groupId).filter((id) => id.startsWith(prefix));
    if (named.length === 0) return 0;
    const idle = (await this.admin.describeGroups(named)).groups.filter((g) => g.state === 'Empty' || g.state === 'Dead').map((g) => g.groupId);
    if (idle.length === 0) return 0;
    const results = await this.admin.deleteGroups(idle).catch((error: unknown) => {
      // A group that gained a member since it was described is refused; the others are deleted all the same.
      // (By name: kafkajs's error classes are no named exports an ES module can import.)
      if (error instanceof Error && error.name === 'KafkaJSDeleteGroupsError') return (error as KafkaJSDeleteGroupsError).groups;
      throw error;
    });
    return results.filter((r) => (r.errorCode ?? 0) === 0).length;
  }

  /** Makes each listed partition's log begin at its offset (DeleteRecords): the brokers drop what lies before. */
  async deleteRecordsBelow(topic: string, below: Offsets): Promise<void> {
    await this.connectAdmin();
    await this.admin.deleteTopicRecords({ topic, partitions: [...below].map(([partition, offset]) => ({ partition, offset: String(offset) })) });
  }

  /** Creates the missing topics (ensureTopics); returns how existing ones differ and how many brokers answer. */
  async prepareTopics(specs: readonly TopicSpec[]): Promise<{ mismatches: TopicMismatch[]; brokers: number }> {
    await this.connectAdmin();
    return { mismatches: await ensureTopics(this.admin, specs), brokers: (await this.admin.describeCluster()).brokers.length };
  }

  /**
   * Readiness probe: the cluster answers a metadata request for `topic` within the timeout (an
   * answer that the topic does not exist yet is an answer). One topic, not describeCluster:
   * kafkajs asks for that with an empty topic list, which the protocol reads as every topic, so
   * each probe parsed the metadata of every partition the brokers hold, whoever's it is.
   */
  async ping(topic: string, timeoutMs: number): Promise<void> {
    const answered = this.connectProbe()
      .then(() => this.probe.fetchTopicMetadata({ topics: [topic] }))
      .then(
        () => undefined,
        (error: unknown) => {
          if ((error as { type?: unknown }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw error;
        },
      );
    await withTimeout(answered, timeoutMs, 'kafka');
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect(), this.probe.disconnect()]);
  }
}
