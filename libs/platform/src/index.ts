import type { Kafka, Admin } from 'kafkajs';
import type { Settings } from '@meridian/config';
import { createKafka, ensureTopics, pingKafka, topicsFor, topicSpecs, type Topics } from '@meridian/kafka';
import { createClickHouse, ensureDatabase, migrate, pingClickHouse, type ClickHouseClient, type ClickHouseOptions } from '@meridian/clickhouse';
import { createStorage, ensureBucket, pingStorage, type Storage } from '@meridian/storage';
import type { Logger } from '@meridian/observability';

/**
 * The adapters every app needs, built from one Settings object. Apps take what they use;
 * `prepare` makes the topics, database (with migrations) and bucket exist, idempotently.
 */
export type Platform = {
  readonly settings: Settings;
  readonly logger: Logger;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly topics: Topics;
  readonly clickhouse: ClickHouseClient;
  readonly clickhouseOptions: ClickHouseOptions;
  readonly storage: Storage;
  readonly probes: ReadonlyArray<{ name: string; check(): Promise<void> }>;
  prepare(): Promise<void>;
  close(): Promise<void>;
};

export function createPlatform(settings: Settings, logger: Logger, component: string): Platform {
  const kafka = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: `${settings.KAFKA_CLIENT_ID}-${component}`, logger });
  const admin = kafka.admin();
  const topics = topicsFor(settings.MERIDIAN_TOPIC_PREFIX);
  const clickhouseOptions: ClickHouseOptions = {
    url: settings.CLICKHOUSE_URL,
    username: settings.CLICKHOUSE_USER,
    password: settings.CLICKHOUSE_PASSWORD,
    database: settings.CLICKHOUSE_DATABASE,
    logger,
  };
  const clickhouse = createClickHouse(clickhouseOptions);
  const storage = createStorage({
    endpoint: settings.S3_ENDPOINT,
    accessKey: settings.S3_ACCESS_KEY,
    secretKey: settings.S3_SECRET_KEY,
    region: settings.S3_REGION,
    bucket: settings.S3_BUCKET,
  });
  let adminConnected: Promise<void> | null = null;
  const connectAdmin = () => (adminConnected ??= admin.connect().catch((e: unknown) => {
    adminConnected = null;
    throw e;
  }));
  const timeout = settings.MERIDIAN_READY_TIMEOUT_MS;
  return {
    settings,
    logger,
    kafka,
    admin,
    topics,
    clickhouse,
    clickhouseOptions,
    storage,
    probes: [
      { name: 'kafka', check: async () => { await connectAdmin(); await pingKafka(admin, timeout); } },
      { name: 'clickhouse', check: () => pingClickHouse(clickhouse) },
      { name: 'minio', check: () => pingStorage(storage) },
    ],
    async prepare() {
      await connectAdmin();
      await ensureTopics(admin, topicSpecs(topics, settings.KAFKA_POINTS_PARTITIONS));
      await ensureDatabase(clickhouseOptions);
      const applied = await migrate(clickhouse);
      if (applied.length > 0) logger.info({ migrations: applied }, 'clickhouse migrations applied');
      await ensureBucket(storage, settings.S3_REGION);
    },
    async close() {
      await Promise.allSettled([admin.disconnect(), clickhouse.close()]);
    },
  };
}
