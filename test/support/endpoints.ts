/** The settings a cluster's environment sets beyond the endpoints (cluster.sh env). */
export const TOPOLOGY_SETTINGS = [
  'KAFKA_REPLICATION_FACTOR',
  'KAFKA_MIN_INSYNC_REPLICAS',
  'CLICKHOUSE_CLUSTER',
  'CLICKHOUSE_REPLICA_PATH',
  'CLICKHOUSE_URLS',
  'CLICKHOUSE_INSERT_QUORUM',
  'CLICKHOUSE_INSERT_QUORUM_TIMEOUT_MS',
] as const;

/** Where the real services of a test run are; provided by the global setup to every test file. */
export type StackEndpoints = {
  readonly KAFKA_BROKERS: string;
  readonly CLICKHOUSE_URL: string;
  readonly CLICKHOUSE_USER: string;
  readonly CLICKHOUSE_PASSWORD: string;
  readonly S3_ENDPOINT: string;
  readonly S3_ACCESS_KEY: string;
  readonly S3_SECRET_KEY: string;
  /** Unique per test run: topic prefixes, databases and buckets of this run start with it. */
  readonly RUN_ID: string;
  /**
   * Set to 'chdb' when ClickHouse is the conformance tier's test-only front over chDB
   * (test/modern/chdb-front.py): current ClickHouse, but one query at a time, answers buffered.
   */
  readonly CLICKHOUSE_FRONT?: 'chdb';
  /**
   * Settings of a distributed topology taken from the environment (`deploy/cluster/cluster.sh
   * env`): every test's settings carry them, so the seed's tests run against the cluster as set up.
   */
  readonly TOPOLOGY?: Readonly<Record<string, string>>;
  /** How the stack was found: 'environment', 'testcontainers' or 'local'. */
  readonly SOURCE: string;
};

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackEndpoints;
  }
}
