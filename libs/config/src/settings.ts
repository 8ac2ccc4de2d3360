import { z } from 'zod';
import { serviceSettings } from './settings/service.ts';
import { kafkaSettings } from './settings/kafka.ts';
import { clickhouseSettings } from './settings/clickhouse.ts';
import { storageSettings } from './settings/storage.ts';
import { httpSettings } from './settings/http.ts';
import { uploadsSettings } from './settings/uploads.ts';
import { pushSettings } from './settings/push.ts';
import { readsSettings } from './settings/reads.ts';
import { prometheusSettings } from './settings/prometheus.ts';
import { deletionsSettings } from './settings/deletions.ts';
import { rollupsSettings } from './settings/rollups.ts';
import { archiveSettings } from './settings/archive.ts';
import { filesSettings } from './settings/files.ts';
import { tasksSettings } from './settings/tasks.ts';
import { cliSettings } from './settings/cli.ts';

/**
 * Every setting Meridian reads, with its environment variable, default and meaning, grouped by the
 * component that reads it (one file each under settings/). These groups are the single source: the
 * settings page of the docs (docs/operating/settings.md) is generated from them
 * (`npm run settings-table`), and `loadSettings` validates the environment against them.
 */
export const settingGroups = [
  { title: 'The service', about: 'Where the api and the ingest worker listen, how they log, and what names them.', definitions: serviceSettings },
  { title: 'The event log (Kafka)', about: 'The brokers, the topics and how writes to them are acknowledged.', definitions: kafkaSettings },
  { title: 'ClickHouse', about: 'The server or replicas holding the projections.', definitions: clickhouseSettings },
  { title: 'Object storage (S3)', about: 'The bucket holding staged uploads and file blobs.', definitions: storageSettings },
  { title: "The api's HTTP edge", about: 'What one request may send and how long it may take, before any route sees it.', definitions: httpSettings },
  { title: 'Uploads', about: 'Receiving uploads in the api, and running staged ones in the ingest worker.', definitions: uploadsSettings },
  {
    title: 'The push path and the telemetry protocols',
    about: "Small uploads and agents' writes, decided in the api and written to the log at once.",
    definitions: pushSettings,
  },
  { title: 'Downloads, series and the catalog', about: 'What one read may ask for and stream.', definitions: readsSettings },
  { title: 'The Prometheus query API', about: 'What one PromQL query may cost.', definitions: prometheusSettings },
  { title: 'Sealed rollup buckets', about: "The ingest worker's pass that seals the closed buckets of the rollups for reads.", definitions: rollupsSettings },
  { title: 'Deleting points and retention', about: 'Deleting ranges of points, and the retention rules applied as deletions.', definitions: deletionsSettings },
  { title: 'The archive', about: "The points topic's archive in object storage, and the window the brokers keep.", definitions: archiveSettings },
  { title: 'Files', about: 'Defined files: quotas, sharing, and the collection of blobs no file references.', definitions: filesSettings },
  { title: 'Tasks and the folds', about: "Following tasks, the folds' snapshots, and the read models in ClickHouse.", definitions: tasksSettings },
  { title: 'The CLI', about: 'Read by `meridian` only.', definitions: cliSettings },
] as const;

export const settingDefinitions = {
  ...serviceSettings,
  ...kafkaSettings,
  ...clickhouseSettings,
  ...storageSettings,
  ...httpSettings,
  ...uploadsSettings,
  ...pushSettings,
  ...readsSettings,
  ...prometheusSettings,
  ...rollupsSettings,
  ...deletionsSettings,
  ...archiveSettings,
  ...filesSettings,
  ...tasksSettings,
  ...cliSettings,
} as const;

export type SettingName = keyof typeof settingDefinitions;

/**
 * Rules that tie settings together, checked once each has parsed on its own (zod refinements
 * over the parsed values); a broken rule is reported at start like an invalid value.
 */
export const settingRules = z
  .object({
    KAFKA_REPLICATION_FACTOR: z.number(),
    KAFKA_MIN_INSYNC_REPLICAS: z.number(),
    MERIDIAN_POINT_BATCH_SIZE: z.number(),
    MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION: z.number(),
    MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST: z.number(),
    MERIDIAN_UPLOAD_STAGING: z.string(),
    CLICKHOUSE_CLUSTER: z.string(),
    MERIDIAN_STAGE_TTL_MS: z.number(),
    MERIDIAN_UPLOAD_TIME_BUDGET_MS: z.number(),
    MERIDIAN_FILES_READ_MODEL_WAIT_MS: z.number(),
    MERIDIAN_BLOB_REMOVAL_LEASE_MS: z.number(),
    MERIDIAN_BLOB_CLAIM_TTL_MS: z.number(),
    MERIDIAN_MAX_UPLOAD_BYTES: z.number(),
    MERIDIAN_STORAGE_PART_BYTES: z.number(),
    MERIDIAN_BODY_BYTES_IN_FLIGHT: z.number(),
    MERIDIAN_MAX_JSON_BODY_BYTES: z.number(),
    MERIDIAN_PUSH_MAX_BYTES: z.number(),
  })
  .refine((s) => s.KAFKA_MIN_INSYNC_REPLICAS <= s.KAFKA_REPLICATION_FACTOR, {
    path: ['KAFKA_MIN_INSYNC_REPLICAS'],
    message: 'at most KAFKA_REPLICATION_FACTOR: a topic with fewer replicas than min.insync.replicas refuses every acknowledged write',
  })
  .refine((s) => s.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION <= s.MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST, {
    path: ['MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION'],
    message: "at most MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST: a request holds at least one partition's share",
  })
  .refine((s) => s.MERIDIAN_UPLOAD_STAGING !== 'on' || s.CLICKHOUSE_CLUSTER === '', {
    path: ['MERIDIAN_UPLOAD_STAGING'],
    message:
      'not on when CLICKHOUSE_CLUSTER is set (auto stages nothing then): an ATTACH into a replicated points table reaches the other replicas outside the insert quorum',
  })
  .refine((s) => s.MERIDIAN_STAGE_TTL_MS >= s.MERIDIAN_UPLOAD_TIME_BUDGET_MS, {
    path: ['MERIDIAN_STAGE_TTL_MS'],
    message: 'at least MERIDIAN_UPLOAD_TIME_BUDGET_MS: the sweeper would drop the stages of an upload still running',
  })
  .refine((s) => s.MERIDIAN_BLOB_REMOVAL_LEASE_MS >= 4 * s.MERIDIAN_FILES_READ_MODEL_WAIT_MS, {
    path: ['MERIDIAN_BLOB_REMOVAL_LEASE_MS'],
    message:
      "at least 4 × MERIDIAN_FILES_READ_MODEL_WAIT_MS: a collection's check after its removals waits that long for the read model, within a quarter of the lease",
  })
  .refine((s) => s.MERIDIAN_BLOB_CLAIM_TTL_MS >= s.MERIDIAN_UPLOAD_TIME_BUDGET_MS, {
    path: ['MERIDIAN_BLOB_CLAIM_TTL_MS'],
    message: "at least MERIDIAN_UPLOAD_TIME_BUDGET_MS: a claim younger than the time a definition may take is never taken for a dead one's",
  })
  .refine((s) => s.MERIDIAN_MAX_UPLOAD_BYTES <= 10_000 * s.MERIDIAN_STORAGE_PART_BYTES, {
    path: ['MERIDIAN_STORAGE_PART_BYTES'],
    message: 'at least MERIDIAN_MAX_UPLOAD_BYTES / 10,000: a multipart upload has at most 10,000 parts',
  })
  .refine((s) => s.MERIDIAN_BODY_BYTES_IN_FLIGHT >= Math.max(s.MERIDIAN_MAX_JSON_BODY_BYTES, s.MERIDIAN_PUSH_MAX_BYTES), {
    path: ['MERIDIAN_BODY_BYTES_IN_FLIGHT'],
    message: 'at least MERIDIAN_MAX_JSON_BODY_BYTES and MERIDIAN_PUSH_MAX_BYTES: a body the routes accept must fit in the budget alone',
  });
