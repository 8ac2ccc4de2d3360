import {
  Kafka,
  Partitioners,
  logLevel,
  type Admin,
  type CompressionTypes,
  type Producer,
  type LogEntry,
  type ProducerBatch,
  type ProducerRecord,
  type Transaction,
} from 'kafkajs';
import type { Logger } from '@meridian/observability';
import { compressionType, type LogCompression } from './compression.ts';
import { topicMismatches, type TopicMismatch, type TopicSpec } from './topics.ts';

export type KafkaOptions = {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logger: Logger;
  /** How the producers compress what they write (MERIDIAN_LOG_COMPRESSION); zstd unless said. */
  readonly compression?: LogCompression;
};

export const DEFAULT_LOG_COMPRESSION: LogCompression = 'zstd';

const levels: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/**
 * kafkajs warns at every start that capped retries "may invalidate EoS guarantees" for the
 * idempotent producer. The cap is deliberate: a send that gives up answers 503 (the client
 * retries with its Idempotency-Key; a duplicate command runs once) or aborts its transaction.
 */
const DELIBERATE = /^Limiting retries for the idempotent producer/;

/**
 * Kafka's "not yet" to a transaction begun while the coordinator still completes the same id's
 * last commit (CONCURRENT_TRANSACTIONS): a retriable answer the producer retries, expected when
 * transactions follow each other closely (the push writers), and no error of anyone's.
 */
const NOT_YET = /another concurrent operation on the same transaction/;

export function createKafka(options: KafkaOptions): Kafka {
  const log = options.logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    connectionTimeout: 3000,
    retry: { initialRetryTime: 200, retries: 8 },
    // kafkajs logs through pino, at warn and above: its info lines are per-connection noise.
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ namespace, level, log: entry }: LogEntry) => {
        const { message, ...extra } = entry;
        const expected = DELIBERATE.test(message) || NOT_YET.test(String((extra as { error?: unknown }).error ?? ''));
        log[expected ? 'debug' : (levels[level] ?? 'info')]({ namespace, ...extra }, message);
      },
  });
}

/**
 * The only producer configuration Meridian uses: idempotent, acks from all in-sync
 * replicas, one request in flight so retries can never reorder a key's events.
 */
export function createProducer(
  kafka: Kafka,
  options: { transactionalId?: string; transactionTimeoutMs?: number; firstRetryMs?: number; compression?: LogCompression } = {},
): Producer {
  return compressing(
    options.compression ?? DEFAULT_LOG_COMPRESSION,
    kafka.producer({
      ...(options.firstRetryMs === undefined ? {} : { retry: { initialRetryTime: options.firstRetryMs, retries: 12 } }),
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
      // An upload is one transaction: give it the broker's default ceiling (transaction.max.timeout.ms)
      // unless the writer's transactions are short (pushes), where a dead writer's open one should not
      // hold its partitions' readers back that long.
      ...(options.transactionalId ? { transactionalId: options.transactionalId, transactionTimeout: options.transactionTimeoutMs ?? 900_000 } : {}),
    }),
  );
}

/**
 * The producer with every send, its own or a transaction's, compressed with `type` unless the
 * call says otherwise: kafkajs takes the compression per call, and the callers should not each
 * have to know the setting.
 */
function compressing(compression: LogCompression, producer: Producer): Producer {
  if (compression === 'none') return producer;
  const type: CompressionTypes = compressionType(compression);
  const sends = <T extends Pick<Producer, 'send' | 'sendBatch'>>(target: T): T => {
    const { send, sendBatch } = target;
    return Object.assign(target, {
      send: (record: ProducerRecord) => send({ compression: type, ...record }),
      sendBatch: (batch: ProducerBatch) => sendBatch({ compression: type, ...batch }),
    });
  };
  const { transaction } = producer;
  return Object.assign(sends(producer), { transaction: async (): Promise<Transaction> => sends(await transaction()) });
}

// kafkajs is CommonJS and its ConfigResourceTypes is not importable by name from ESM.
const TOPIC_RESOURCE = 2;
const MIN_INSYNC = 'min.insync.replicas';
const SEGMENT_MS = 'segment.ms';

/**
 * Creates missing topics; never alters existing ones. Retention is infinite: the log is the
 * source of truth. Events are keyed (a task's by its id, points by metric name) and their order
 * holds within a partition only: adding partitions would send a key's later events to another
 * partition than its earlier ones; replication is changed by a reassignment, which is an
 * operator's call. So an existing topic is kept as it is, and where it differs from its spec
 * (topicMismatches) is returned for the caller to report.
 */
export async function ensureTopics(admin: Admin, specs: readonly TopicSpec[]): Promise<TopicMismatch[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  const present = specs.filter((s) => existing.has(s.topic));
  const mismatches = present.length > 0 ? await describeExisting(admin, present) : [];
  if (missing.length === 0) return mismatches;
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((s) => ({
      topic: s.topic,
      numPartitions: s.partitions,
      replicationFactor: s.replicationFactor,
      configEntries: [
        { name: 'retention.ms', value: '-1' },
        { name: 'retention.bytes', value: '-1' },
        { name: 'cleanup.policy', value: 'delete' },
        { name: MIN_INSYNC, value: String(s.minInsyncReplicas) },
        ...(s.segmentMs === undefined ? [] : [{ name: SEGMENT_MS, value: String(s.segmentMs) }]),
      ],
    })),
  });
  return mismatches;
}

/** Partitions, replication, min.insync.replicas and segment.ms of existing topics, against their specs. */
async function describeExisting(admin: Admin, specs: readonly TopicSpec[]): Promise<TopicMismatch[]> {
  const names = specs.map((s) => s.topic);
  const [{ topics }, { resources }] = await Promise.all([
    admin.fetchTopicMetadata({ topics: names }),
    admin.describeConfigs({ includeSynonyms: false, resources: names.map((name) => ({ type: TOPIC_RESOURCE, name, configNames: [MIN_INSYNC, SEGMENT_MS] })) }),
  ]);
  return specs.flatMap((spec) => {
    const partitions = topics.find((t) => t.name === spec.topic)?.partitions ?? [];
    const config = (name: string) => resources.find((r) => r.resourceName === spec.topic)?.configEntries.find((e) => e.configName === name)?.configValue;
    return topicMismatches(spec, {
      partitions: partitions.length,
      replicationFactor: Math.min(...partitions.map((p) => p.replicas.length)),
      minInsyncReplicas: Number(config(MIN_INSYNC)),
      segmentMs: Number(config(SEGMENT_MS)),
    });
  });
}
