import { Kafka, Partitioners, logLevel, type Admin, type Producer, type LogEntry } from 'kafkajs';
import type { Logger } from '@meridian/observability';
import { topicMismatches, type TopicMismatch, type TopicSpec } from './topics.ts';

export type KafkaOptions = { readonly brokers: readonly string[]; readonly clientId: string; readonly logger: Logger };

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

export function createKafka(options: KafkaOptions): Kafka {
  const log = options.logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    connectionTimeout: 3000,
    retry: { initialRetryTime: 200, retries: 8 },
    // kafkajs logs through pino, at warn and above: its info lines are per-connection noise.
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log: entry }: LogEntry) => {
      const { message, ...extra } = entry;
      log[DELIBERATE.test(message) ? 'debug' : (levels[level] ?? 'info')]({ namespace, ...extra }, message);
    },
  });
}

/**
 * The only producer configuration Meridian uses: idempotent, acks from all in-sync
 * replicas, one request in flight so retries can never reorder a key's events.
 */
export function createProducer(kafka: Kafka, options: { transactionalId?: string; transactionTimeoutMs?: number; firstRetryMs?: number } = {}): Producer {
  return kafka.producer({
    ...(options.firstRetryMs === undefined ? {} : { retry: { initialRetryTime: options.firstRetryMs, retries: 12 } }),
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
    // An upload is one transaction: give it the broker's default ceiling (transaction.max.timeout.ms)
    // unless the writer's transactions are short (pushes), where a dead writer's open one should not
    // hold its partitions' readers back that long.
    ...(options.transactionalId ? { transactionalId: options.transactionalId, transactionTimeout: options.transactionTimeoutMs ?? 900_000 } : {}),
  });
}

// kafkajs is CommonJS and its ConfigResourceTypes is not importable by name from ESM.
const TOPIC_RESOURCE = 2;
const MIN_INSYNC = 'min.insync.replicas';

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
      ],
    })),
  });
  return mismatches;
}

/** Partitions, replication and min.insync.replicas of existing topics, against their specs. */
async function describeExisting(admin: Admin, specs: readonly TopicSpec[]): Promise<TopicMismatch[]> {
  const names = specs.map((s) => s.topic);
  const [{ topics }, { resources }] = await Promise.all([
    admin.fetchTopicMetadata({ topics: names }),
    admin.describeConfigs({ includeSynonyms: false, resources: names.map((name) => ({ type: TOPIC_RESOURCE, name, configNames: [MIN_INSYNC] })) }),
  ]);
  return specs.flatMap((spec) => {
    const partitions = topics.find((t) => t.name === spec.topic)?.partitions ?? [];
    const minInsync = resources.find((r) => r.resourceName === spec.topic)?.configEntries.find((e) => e.configName === MIN_INSYNC)?.configValue;
    return topicMismatches(spec, {
      partitions: partitions.length,
      replicationFactor: Math.min(...partitions.map((p) => p.replicas.length)),
      minInsyncReplicas: Number(minInsync),
    });
  });
}

