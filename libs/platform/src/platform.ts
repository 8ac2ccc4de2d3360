import type { Kafka, Admin, Producer } from 'kafkajs';
import type { Settings } from '@meridian/config';
import { createKafka, createProducer, ensureTopics, pingKafka, replicationWarning, topicsFor, topicSpecs, WHY_KEPT, type Topics } from '@meridian/kafka';
import { createClickHouse, ensureDatabase, migrate, pingClickHouse, queryText, replicationOf, serverCapabilities, type ClickHouseClient, type ClickHouseOptions } from '@meridian/clickhouse';
import { blobStoreOver, createStorage, type MinioBlobStore, type Storage } from '@meridian/storage';
import type { Logger } from '@meridian/observability';
import { untilDone, type UntilDoneOptions } from './until-done.ts';

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
  readonly blobs: MinioBlobStore;
  readonly probes: ReadonlyArray<{ name: string; check(): Promise<void> }>;
  /** How start-up work (following a log, running a consumer) retries: servers wait, a CLI gives up. */
  readonly startRetry: UntilDoneOptions;
  /** The process's idempotent producer, connected on first use. */
  producer(): Promise<Producer>;
  /** Makes the topics exist (all a CLI needs). */
  prepareTopics(): Promise<void>;
  /** Makes topics, database (with migrations) and bucket exist. */
  prepare(): Promise<void>;
  close(): Promise<void>;
};

export function createPlatform(settings: Settings, logger: Logger, component: string, startRetry: UntilDoneOptions = {}): Platform {
  const kafka = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: `${settings.KAFKA_CLIENT_ID}-${component}`, logger });
  const admin = kafka.admin();
  const topics = topicsFor(settings.MERIDIAN_TOPIC_PREFIX);
  const otherClickHouseUrls = settings.CLICKHOUSE_URLS.split(',').filter((url) => url !== '' && url !== settings.CLICKHOUSE_URL);
  const clickhouseOptions: ClickHouseOptions = {
    url: settings.CLICKHOUSE_URL,
    username: settings.CLICKHOUSE_USER,
    password: settings.CLICKHOUSE_PASSWORD,
    database: settings.CLICKHOUSE_DATABASE,
    fallbackUrls: otherClickHouseUrls,
    logger,
  };
  const clickhouse = createClickHouse(clickhouseOptions);
  const replication = settings.CLICKHOUSE_CLUSTER === '' ? null : replicationOf(settings.CLICKHOUSE_REPLICA_PATH, settings.CLICKHOUSE_DATABASE);
  const storage = createStorage({
    endpoint: settings.S3_ENDPOINT,
    accessKey: settings.S3_ACCESS_KEY,
    secretKey: settings.S3_SECRET_KEY,
    region: settings.S3_REGION,
    bucket: settings.S3_BUCKET,
  });
  const blobs = blobStoreOver(storage, settings.S3_REGION);
  let adminConnected: Promise<void> | null = null;
  const connectAdmin = () => (adminConnected ??= admin.connect().catch((e: unknown) => {
    adminConnected = null;
    throw e;
  }));
  const producer = createProducer(kafka);
  let producerConnected: Promise<void> | null = null;
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
    blobs,
    startRetry,
    probes: [
      { name: 'kafka', check: async () => { await connectAdmin(); await pingKafka(admin, timeout); } },
      // With replicas, up while any one answers: reads fail over to it (download/http.ts).
      {
        name: 'clickhouse',
        check: () => (otherClickHouseUrls.length === 0 ? pingClickHouse(clickhouse) : queryText(clickhouseOptions, { sql: 'SELECT 1' }).then(() => undefined)),
      },
      { name: 'minio', check: () => blobs.ping() },
    ],
    async producer() {
      await (producerConnected ??= producer.connect().catch((e: unknown) => {
        producerConnected = null;
        throw e;
      }));
      return producer;
    },
    async prepareTopics() {
      const layout = {
        pointsPartitions: settings.KAFKA_POINTS_PARTITIONS,
        tasksPartitions: settings.KAFKA_TASKS_PARTITIONS,
        replicationFactor: settings.KAFKA_REPLICATION_FACTOR,
        minInsyncReplicas: settings.KAFKA_MIN_INSYNC_REPLICAS,
      };
      const { mismatches, brokers } = await untilDone('creating topics', async () => {
        await connectAdmin();
        return { mismatches: await ensureTopics(admin, topicSpecs(topics, layout)), brokers: (await admin.describeCluster()).brokers.length };
      }, logger, startRetry);
      const underReplicated = replicationWarning(layout.replicationFactor, brokers);
      if (underReplicated) logger.warn({ brokers, replicationFactor: layout.replicationFactor }, underReplicated);
      for (const m of mismatches) logger.warn(m, `topic ${m.topic} has ${m.property} ${m.actual}, not the ${m.wanted} set; kept as it is: ${WHY_KEPT[m.property]}`);
    },
    async prepare() {
      await this.prepareTopics();
      await ensureDatabase(clickhouseOptions);
      // The server's version decides what the adapter sends (libs/clickhouse/src/capabilities.ts).
      const { version, databaseEngine, ...caps } = await serverCapabilities(clickhouse);
      logger.info({ version, databaseEngine, ...caps }, 'clickhouse server');
      const applied = await migrate(clickhouse, undefined, replication);
      if (applied.length > 0) logger.info({ migrations: applied }, 'clickhouse migrations applied');
      // A replicated table is created per server: every other server of the cluster migrates too.
      for (const url of otherClickHouseUrls) {
        const options = { ...clickhouseOptions, url };
        await ensureDatabase(options);
        const server = createClickHouse(options);
        try {
          const done = await migrate(server, undefined, replication);
          if (done.length > 0) logger.info({ url, migrations: done }, 'clickhouse migrations applied');
        } finally {
          await server.close();
        }
      }
      await blobs.ensureBucket();
      // A store that refuses lifecycle rules (a least-privilege key) still works: staged leftovers then stay.
      await blobs.expireStaging(settings.MERIDIAN_STAGING_EXPIRY_DAYS).catch((err: unknown) => logger.warn({ err }, 'staging expiry rule not set'));
    },
    async close() {
      await Promise.allSettled([producer.disconnect(), admin.disconnect(), clickhouse.close()]);
    },
  };
}
