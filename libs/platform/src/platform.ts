import {
  ensureDatabase,
  migrateServers,
  pingClickHouse,
  queryText,
  replicationOf,
  serverCapabilities,
  createClickHouse,
  type ClickHouseClient,
  type ClickHouseOptions,
} from '@meridian/clickhouse';
import { consumerGroupsFor, KafkaEventLog, replicationWarning, topicsFor, topicSpecs, WHY_KEPT, type KafkaOptions, type TopicLayout } from '@meridian/kafka';
import { createBlobStore, type MinioBlobStore, type StorageOptions } from '@meridian/storage';
import type { Logger } from '@meridian/observability';
import type { FoldContext, FoldLimits } from '@meridian/folds';
import { untilDone, type UntilDoneOptions } from '@meridian/runtime';

/** The adapters a process is composed of (main.ts builds them from plain options). */
export type Adapters = {
  readonly log: KafkaEventLog;
  readonly clickhouse: ClickHouseClient;
  readonly blobs: MinioBlobStore;
};

/** The plain options the start-up work needs (libs/config's adapterOptions maps them from the settings). */
export type PlatformOptions = {
  readonly topicPrefix: string;
  readonly topicLayout: TopicLayout;
  /** The connection `clickhouse` was made with; its fallbackUrls are the cluster's other servers. */
  readonly clickhouse: Omit<ClickHouseOptions, 'logger'>;
  /** Where replicated tables keep their replicas' state (CLICKHOUSE_REPLICA_PATH); null on one server. */
  readonly clickhouseReplicaPath: string | null;
  readonly stagingExpiryDays: number;
  readonly readyTimeoutMs: number;
  readonly folds: FoldLimits;
};

/**
 * The start-up work every server shares, over its adapters: readiness probes, and making the
 * topics, the database (with migrations) and the bucket exist, idempotently.
 */
export type Platform = {
  readonly probes: ReadonlyArray<{ name: string; check(): Promise<void> }>;
  /** Makes the topics exist (all a CLI needs). */
  prepareTopics(): Promise<void>;
  /** Makes topics, database (with migrations) and bucket exist. */
  prepare(): Promise<void>;
  /** Closes the adapters. */
  close(): Promise<void>;
};

export function createPlatform(adapters: Adapters, options: PlatformOptions, logger: Logger, startRetry: UntilDoneOptions = {}): Platform {
  const { log, clickhouse, blobs } = adapters;
  const clickhouseOptions: ClickHouseOptions = { ...options.clickhouse, logger };
  const otherClickHouseUrls = options.clickhouse.fallbackUrls ?? [];
  const replication = options.clickhouseReplicaPath === null ? null : replicationOf(options.clickhouseReplicaPath, options.clickhouse.database);
  const topics = topicsFor(options.topicPrefix);
  const prepareClickHouse = async () => {
    await ensureDatabase(clickhouseOptions);
    // The server's version decides what the adapter sends (libs/clickhouse/src/capabilities.ts).
    const { version, databaseEngine, ...caps } = await serverCapabilities(clickhouse);
    logger.info({ version, databaseEngine, ...caps }, 'clickhouse server');
    // A replicated table is created per server: every other server of the cluster migrates too,
    // each migration on all of them before the next (migrateServers says why).
    const others = otherClickHouseUrls.map((url) => ({ ...clickhouseOptions, url }));
    for (const server of others) await ensureDatabase(server);
    const otherClients = others.map((server) => createClickHouse(server));
    try {
      const applied = await migrateServers([clickhouse, ...otherClients], undefined, replication);
      applied.forEach((done, i) => {
        if (done.length > 0) logger.info({ ...(i > 0 ? { url: others[i - 1]!.url } : {}), migrations: done }, 'clickhouse migrations applied');
      });
    } finally {
      await Promise.all(otherClients.map((client) => client.close()));
    }
  };
  const prepareBucket = async () => {
    await blobs.ensureBucket();
    // A store that refuses lifecycle rules (a least-privilege key) still works: staged leftovers then stay.
    await blobs.expireStaging(options.stagingExpiryDays).catch((err: unknown) => logger.warn({ err }, 'staging expiry rule not set'));
  };
  return {
    probes: [
      { name: 'kafka', check: () => log.ping(topics.tasks, options.readyTimeoutMs) },
      // With replicas, up while any one answers: reads fail over to it (download/http.ts).
      {
        name: 'clickhouse',
        check: () => (otherClickHouseUrls.length === 0 ? pingClickHouse(clickhouse) : queryText(clickhouseOptions, { sql: 'SELECT 1' }).then(() => undefined)),
      },
      { name: 'minio', check: () => blobs.ping() },
    ],
    async prepareTopics() {
      const layout = options.topicLayout;
      const { mismatches, brokers } = await untilDone('creating topics', () => log.prepareTopics(topicSpecs(topics, layout)), logger, startRetry);
      const underReplicated = replicationWarning(layout.replicationFactor, brokers);
      if (underReplicated) logger.warn({ brokers, replicationFactor: layout.replicationFactor }, underReplicated);
      for (const m of mismatches)
        logger.warn(m, `topic ${m.topic} has ${m.property} ${m.actual}, not the ${m.wanted} set; kept as it is: ${WHY_KEPT[m.property]}`);
    },
    async prepare() {
      // The three stores are independent: prepared side by side, a start waits for the slowest
      // round trips instead of their sum. Every step is idempotent; all are settled before a
      // failure is thrown, so a retry of prepare() never overlaps one still running.
      const steps = await Promise.allSettled([this.prepareTopics(), prepareClickHouse(), prepareBucket()]);
      const failed = steps.find((step): step is PromiseRejectedResult => step.status === 'rejected');
      if (failed) throw failed.reason;
    },
    async close() {
      await Promise.allSettled([log.close(), clickhouse.close()]);
    },
  };
}

/** The folds' context over a process's adapters. */
export function foldContext(adapters: Adapters, options: PlatformOptions, logger: Logger, startRetry: UntilDoneOptions = {}): FoldContext {
  return {
    log: adapters.log,
    snapshots: (topic) => adapters.blobs.snapshots(topic),
    topics: topicsFor(options.topicPrefix),
    groupPrefix: options.topicPrefix,
    logger,
    startRetry,
    limits: options.folds,
  };
}

/** The adapters from their plain options (libs/config's adapterOptions); `logger` takes the clients' own log lines. */
export function createAdapters(
  options: { readonly kafka: Omit<KafkaOptions, 'logger'>; readonly clickhouse: Omit<ClickHouseOptions, 'logger'>; readonly storage: StorageOptions },
  logger: Logger,
): Adapters {
  return {
    log: new KafkaEventLog({ ...options.kafka, logger }),
    clickhouse: createClickHouse({ ...options.clickhouse, logger }),
    blobs: createBlobStore(options.storage),
  };
}

/** What every app's services hold over its adapters: the names under the topic prefix, the log, the bucket and the folds' context. */
export function sharedServices(adapters: Adapters, options: PlatformOptions, logger: Logger, startRetry: UntilDoneOptions = {}) {
  return {
    logger,
    topics: topicsFor(options.topicPrefix),
    groups: consumerGroupsFor(options.topicPrefix),
    log: adapters.log,
    blobs: adapters.blobs,
    folds: foldContext(adapters, options, logger, startRetry),
  };
}
