import { z } from 'zod';

/**
 * Every setting Meridian reads, with its environment variable, default and meaning.
 * This table is the single source: the README's settings table is generated from it
 * (`npm run settings-table`), and `loadSettings` validates the environment against it.
 */
const port = z.coerce.number().int().min(1).max(65535);
const positiveInt = z.coerce.number().int().positive();
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const settingDefinitions = {
  MERIDIAN_API_HOST: { schema: z.string().min(1), default: '127.0.0.1', doc: 'Address the api listens on.' },
  MERIDIAN_API_PORT: { schema: port, default: '8088', doc: 'Port the api listens on.' },
  LOG_LEVEL: {
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    default: 'info',
    doc: 'pino log level.',
  },
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
  KAFKA_POINTS_PARTITIONS: { schema: positiveInt, default: '3', doc: 'Partitions of the points topic when it is created.' },
  KAFKA_SESSION_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(6000),
    default: '10000',
    doc: 'Consumer group session timeout: how long a crashed worker holds its partitions.',
  },
  CLICKHOUSE_URL: { schema: z.url(), default: 'http://127.0.0.1:18123', doc: 'ClickHouse HTTP endpoint.' },
  CLICKHOUSE_USER: { schema: z.string(), default: 'default', doc: 'ClickHouse user.' },
  CLICKHOUSE_PASSWORD: { schema: z.string(), default: '', doc: 'ClickHouse password (never logged).' },
  CLICKHOUSE_DATABASE: {
    schema: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an identifier'),
    default: 'meridian',
    doc: 'ClickHouse database holding the projections; created at start.',
  },
  S3_ENDPOINT: { schema: z.url(), default: 'http://127.0.0.1:19900', doc: 'S3-compatible endpoint (MinIO).' },
  S3_ACCESS_KEY: { schema: z.string().min(1), default: 'meridian', doc: 'S3 access key.' },
  S3_SECRET_KEY: { schema: z.string().min(1), default: 'meridian-local-secret', doc: 'S3 secret key (never logged).' },
  S3_REGION: { schema: z.string().min(1), default: 'us-east-1', doc: 'S3 region.' },
  S3_BUCKET: {
    schema: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'an S3 bucket name'),
    default: 'meridian',
    doc: 'Bucket for staged uploads and file blobs; created at start.',
  },
  MERIDIAN_STAGING_EXPIRY_DAYS: {
    schema: z.coerce.number().int().min(0).max(3650),
    default: '7',
    doc: 'Days after which staged bytes left behind (an upload refused with 503, a crash) expire in the bucket; 0 keeps them. Applied as a bucket lifecycle rule at start.',
  },
  MERIDIAN_READY_TIMEOUT_MS: {
    schema: positiveInt,
    default: '2000',
    doc: 'How long /readyz waits for each dependency before calling it down.',
  },
  MERIDIAN_MAX_JSON_BODY_BYTES: {
    schema: positiveInt,
    default: '16777216',
    doc: 'Largest JSON request body, in bytes (413 above it).',
  },
  MERIDIAN_MAX_UPLOAD_BYTES: {
    schema: positiveInt,
    default: '5000000000',
    doc: 'Largest file upload (a metrics file or a defined file), in bytes (413 above it); the file is streamed to MinIO, never held in memory.',
  },
  MERIDIAN_FILE_QUOTA_BYTES: {
    schema: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    default: '10000000000',
    doc: 'The default quota: bytes of defined files an account may keep (its live files plus definitions in progress) unless an admin set its own (PUT /api/v1/users/{user_name}/file_quota or `meridian quota`); over it a definition gets 413 saying how much is left. GET /api/v1/users shows usage and the quota that applies.',
  },
  MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD: {
    schema: positiveInt,
    default: '100000',
    doc: 'Most values in one JSON upload (413 above it); larger sets go as a file.',
  },
  MERIDIAN_INLINE_PAYLOAD_BYTES: {
    schema: z.coerce.number().int().min(0).max(8_000_000),
    default: '1048576',
    doc: 'JSON uploads up to this size travel inside their Kafka event; larger ones are staged in MinIO.',
  },
  MERIDIAN_KAFKA_ACK_TIMEOUT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: 'How long the api waits for Kafka to acknowledge a command before answering 503.',
  },
  MERIDIAN_UPLOAD_ATTEMPTS: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '5',
    doc: 'Attempts at an upload that stops on an error other than Kafka\'s or its own rows (storage or network trouble, say), with backoff, before its task fails.',
  },
  MERIDIAN_POINT_BATCH_SIZE: {
    schema: z.coerce.number().int().min(100).max(500_000),
    default: '50000',
    doc: 'Points per point-batch event written to the points topic.',
  },
  MERIDIAN_PROJECTOR_BATCH_ROWS: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '500000',
    doc: 'Most rows the projector writes to ClickHouse in one INSERT (one atomic block; at most 1000000). A single point batch larger than this is written alone.',
  },
  MERIDIAN_REQUEST_TIMEOUT_MS: {
    schema: positiveInt,
    default: '30000',
    doc: 'Longest a non-streaming request may take before the api answers 503 /problems/timeout; streaming uploads and downloads are exempt.',
  },
  MERIDIAN_RATE_LIMIT_PER_SECOND: {
    schema: z.coerce.number().min(0).max(1_000_000),
    default: '50',
    doc: 'Requests per second each authenticated user may sustain (token bucket refill rate; 0 turns rate limiting off). Above it: 429 with Retry-After.',
  },
  MERIDIAN_RATE_LIMIT_BURST: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '100',
    doc: 'Requests an authenticated user may send at once before the per-second rate applies (token bucket size).',
  },
  MERIDIAN_MAX_ROWS_CEILING: {
    schema: z.coerce.number().int().min(1).max(1_000_000_000),
    default: '10000000',
    doc: 'Largest max_rows a metrics download accepts (400 above it); larger results are paged with the cursor.',
  },
  MERIDIAN_DEV_LOGS: { schema: bool, default: 'false', doc: 'Human-readable logs (make run) instead of JSON lines.' },
  // issue 11, crashloop: the crash-loop breaker and the tasks topic's partitions.
  MERIDIAN_MAX_COMMAND_STARTS: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '3',
    doc: 'Times a worker may start a command (an upload, a file definition) that then stops without an outcome because the process died; at the next start its task fails ("processing stopped N times"), the command goes to the dead-letter topic and its partition moves on.',
  },
  KAFKA_TASKS_PARTITIONS: {
    schema: z.coerce.number().int().min(1).max(1000),
    default: '3',
    doc: 'Partitions of the tasks topic when it is created, and the commands the ingest worker runs at once. An existing topic with fewer partitions is kept as it is (a warning says so): adding partitions would move a task\'s later events away from its earlier ones.',
  },
} as const;

export type SettingName = keyof typeof settingDefinitions;
