import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** The server or replicas holding the projections. */
export const clickhouseSettings = {
  CLICKHOUSE_URL: { schema: z.url(), default: 'http://127.0.0.1:18123', doc: 'ClickHouse HTTP endpoint.' },
  CLICKHOUSE_USER: { schema: z.string(), default: 'default', doc: 'ClickHouse user.' },
  CLICKHOUSE_PASSWORD: { schema: z.string(), default: '', doc: 'ClickHouse password (never logged).' },
  CLICKHOUSE_DATABASE: {
    schema: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an identifier'),
    default: 'meridian',
    doc: 'ClickHouse database holding the projections; created at start.',
  },
  CLICKHOUSE_CLUSTER: {
    schema: z.union([z.literal(''), z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an identifier')]),
    default: '',
    doc: 'Name of the ClickHouse cluster (remote_servers) whose replicas hold the tables; empty: one server. When set, migrations create Replicated*MergeTree tables under CLICKHOUSE_REPLICA_PATH, run on every server of CLICKHOUSE_URLS, and the replay swap refuses to run.',
  },
  CLICKHOUSE_REPLICA_PATH: {
    schema: z.string().regex(/^\/[A-Za-z0-9_{}./-]*[^/]$/, 'a ZooKeeper path such as /clickhouse/tables/{shard}'),
    default: '/clickhouse/tables/{shard}',
    doc: "ZooKeeper path under which each replicated table keeps its replicas' state, as `<path>/<database>/<table>`; `{shard}` and the replica name `{replica}` come from each server's macros. Only with CLICKHOUSE_CLUSTER.",
  },
  CLICKHOUSE_URLS: {
    schema: z.union([z.literal(''), z.string().regex(/^https?:\/\/[^,\s]+(,https?:\/\/[^,\s]+)*$/, 'comma-separated http(s) URLs')]),
    default: '',
    doc: 'Every ClickHouse server of the cluster, comma-separated (empty: CLICKHOUSE_URL alone). Migrations run on each (CREATE TABLE of a replicated table is per server); downloads and the catalog go to CLICKHOUSE_URL and, when it cannot be reached, to the next of these that can; /readyz says ClickHouse is up while any answers. Inserts go to CLICKHOUSE_URL only.',
  },
  CLICKHOUSE_INSERT_QUORUM: {
    schema: z.coerce.number().int().min(0).max(16),
    default: '0',
    doc: 'Replicas that must hold each projector insert before it is acknowledged (insert_quorum; 0: off, one server). Set it to the replica count: an acknowledged block is then on every replica, and the projector reads its positions with select_sequential_consistency, so it never resumes past a block a replica lacks. While a replica is down, inserts wait (ingest stalls, reads go on).',
  },
  CLICKHOUSE_INSERT_QUORUM_TIMEOUT_MS: {
    schema: positiveInt,
    default: '600000',
    doc: 'How long one quorum insert waits for the other replicas (insert_quorum_timeout); past it the outcome is unknown and the projector settles and resumes from the positions, as after any failed insert.',
  },
} as const;
