import type { Settings } from './load.ts';

/**
 * The settings as the adapters' plain option objects: the one place that maps one to the other
 * (each main.ts calls it and builds the adapters; the libraries never read Settings). The
 * shapes are the adapters' own (KafkaOptions, ClickHouseOptions, StorageOptions, TopicLayout,
 * FoldLimits), matched structurally so this package depends on none of them.
 */
export function adapterOptions(settings: Settings, component: string) {
  const clickhouseUrls = settings.CLICKHOUSE_URLS.split(',').filter((url) => url !== '' && url !== settings.CLICKHOUSE_URL);
  return {
    kafka: { brokers: settings.KAFKA_BROKERS.split(','), clientId: `${settings.KAFKA_CLIENT_ID}-${component}`, compression: settings.MERIDIAN_LOG_COMPRESSION },
    topicPrefix: settings.MERIDIAN_TOPIC_PREFIX,
    topicLayout: {
      pointsPartitions: settings.KAFKA_POINTS_PARTITIONS,
      tasksPartitions: settings.KAFKA_TASKS_PARTITIONS,
      replicationFactor: settings.KAFKA_REPLICATION_FACTOR,
      minInsyncReplicas: settings.KAFKA_MIN_INSYNC_REPLICAS,
      pointsRetentionMs: settings.MERIDIAN_ARCHIVE_RETENTION_MS,
    },
    clickhouse: {
      url: settings.CLICKHOUSE_URL,
      username: settings.CLICKHOUSE_USER,
      password: settings.CLICKHOUSE_PASSWORD,
      database: settings.CLICKHOUSE_DATABASE,
      fallbackUrls: clickhouseUrls,
      readModelQueryTimeoutMs: settings.MERIDIAN_READ_MODEL_QUERY_TIMEOUT_MS,
    },
    /** Where replicated tables keep their replicas' state; null on one server. */
    clickhouseReplicaPath: settings.CLICKHOUSE_CLUSTER === '' ? null : settings.CLICKHOUSE_REPLICA_PATH,
    projectorBatchRows: settings.MERIDIAN_PROJECTOR_BATCH_ROWS,
    pointsQuorum: { replicas: settings.CLICKHOUSE_INSERT_QUORUM, timeoutMs: settings.CLICKHOUSE_INSERT_QUORUM_TIMEOUT_MS },
    storage: {
      endpoint: settings.S3_ENDPOINT,
      accessKey: settings.S3_ACCESS_KEY,
      secretKey: settings.S3_SECRET_KEY,
      region: settings.S3_REGION,
      bucket: settings.S3_BUCKET,
      parts: { partBytes: settings.MERIDIAN_STORAGE_PART_BYTES, partsInFlight: settings.MERIDIAN_STORAGE_PARTS_IN_FLIGHT },
    },
    stagingExpiryDays: settings.MERIDIAN_STAGING_EXPIRY_DAYS,
    readyTimeoutMs: settings.MERIDIAN_READY_TIMEOUT_MS,
    folds: {
      readyTimeoutMs: settings.MERIDIAN_READY_TIMEOUT_MS,
      ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
      snapshotEveryEvents: settings.MERIDIAN_SNAPSHOT_EVERY_EVENTS,
      snapshotMinIntervalMs: settings.MERIDIAN_SNAPSHOT_MIN_INTERVAL_MS,
      snapshotKeep: settings.MERIDIAN_SNAPSHOT_KEEP,
      taskReleaseIntervalMs: settings.MERIDIAN_TASK_RELEASE_INTERVAL_MS,
    },
  };
}

export type AdapterOptions = ReturnType<typeof adapterOptions>;
