import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** The brokers, the topics and how writes to them are acknowledged. */
export const kafkaSettings = {
  KAFKA_BROKERS: {
    schema: z.string().regex(/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/, 'comma-separated host:port list'),
    default: '127.0.0.1:19092',
    doc: 'Kafka bootstrap brokers, comma-separated host:port.',
  },
  KAFKA_CLIENT_ID: { schema: z.string().min(1), default: 'meridian', doc: 'Kafka client id prefix.' },
  MERIDIAN_TOPIC_PREFIX: {
    schema: z.string().regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, . _ -'),
    default: 'meridian.',
    doc: 'Prefix of every Kafka topic and consumer group (isolates environments and test runs).',
  },
  MERIDIAN_POINT_BATCH_DELTAS: {
    schema: z.enum(['true', 'false']).transform((v) => v === 'true'),
    default: 'true',
    doc: 'Whether point batches are written as PointBatch v4, their timestamps as differences (about half the bytes of a batch of scrapes before compression). Releases before v4 cannot read such batches: set false while processes of such a release still read the points topic (a rolling upgrade), then true.',
  },
  MERIDIAN_POINT_BATCH_PACKED: {
    schema: z.enum(['true', 'false']).transform((v) => v === 'true'),
    default: 'true',
    doc: 'Whether point batches are written as PointBatch v5, their points packed by series (timestamps as differences of intervals, values as decimal integers where they come back exactly): about a quarter fewer bytes on the brokers and in the archive than v4 for scraped telemetry. Releases before v5 cannot read such batches: set false while processes of such a release still read the points topic (a rolling upgrade), then true. False writes v4, or v3 with MERIDIAN_POINT_BATCH_DELTAS=false.',
  },
  MERIDIAN_LOG_COMPRESSION: {
    schema: z.enum(['none', 'gzip', 'zstd']),
    default: 'zstd',
    doc: 'How every producer compresses the record batches it writes to Kafka, which the brokers keep as sent: zstd (Kafka 2.1+) stores point batches in a fraction of their bytes at little CPU; gzip is smaller still at several times the CPU; none as before. Readers decompress whatever they meet, so processes with different values share a log.',
  },
  KAFKA_POINTS_PARTITIONS: { schema: positiveInt, default: '3', doc: 'Partitions of the points topic when it is created.' },
  KAFKA_TASKS_PARTITIONS: {
    schema: z.coerce.number().int().min(1).max(1000),
    default: '3',
    doc: "Partitions of the tasks topic when it is created, and the commands the ingest worker runs at once. An existing topic with fewer partitions is kept as it is (a warning says so): adding partitions would move a task's later events away from its earlier ones.",
  },
  KAFKA_SESSION_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(6000),
    default: '10000',
    doc: 'Consumer group session timeout: how long a crashed worker holds its partitions.',
  },
  KAFKA_REPLICATION_FACTOR: {
    schema: z.coerce.number().int().min(1).max(32767),
    default: '1',
    doc: "Replicas of every partition of every topic Meridian creates (3 on a cluster of 3 or more brokers; no more than the brokers there are). An existing topic with another replication factor is kept as it is, with a warning at start: changing it is a partition reassignment, an operator's job.",
  },
  KAFKA_MIN_INSYNC_REPLICAS: {
    schema: z.coerce.number().int().min(1).max(32767),
    default: '1',
    doc: 'min.insync.replicas of every topic Meridian creates: the replicas that must hold a write before it is acknowledged (every producer sends with acks=all); at most KAFKA_REPLICATION_FACTOR, checked at start. With 3 replicas, 2 lets one broker die without losing an acknowledged event or refusing writes. An existing topic with another value is kept, with a warning.',
  },
  MERIDIAN_KAFKA_ACK_TIMEOUT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: 'How long the api waits for Kafka to acknowledge a command before answering 503.',
  },
} as const;
