import type { ClickHouseClient } from './client.ts';

/**
 * What the connected ClickHouse can do that 18.16 (our local and CI server) cannot, or does
 * differently. The one place where the adapter decides by server version: every other module
 * asks these flags, never the version string.
 */
export type Capabilities = {
  /** `SELECT version()` as the server answered. */
  readonly version: string;
  /** The current database's engine (`Atomic` binds views to tables by UUID; `Ordinary` by name). */
  readonly databaseEngine: string;
  /** Atomic database: a view follows its source table through renames (by UUID). */
  readonly atomicDatabase: boolean;
  /** `EXCHANGE TABLES a AND b` swaps two tables atomically (Atomic databases from 20.x). */
  readonly exchangeTables: boolean;
  /** The server knows `async_insert` (21.11+; its default is 1 from 26.2). */
  readonly knowsAsyncInsert: boolean;
  /** The server knows `insert_deduplication_token` (22.2+). */
  readonly insertDeduplicationToken: boolean;
  /**
   * Inserts into points tables are deduplicated by a token, a second guard behind the sink's
   * positions: the server knows the token, and the database is Atomic, where the catalog is an
   * explicit table that can take the deduplication window too (a materialized view with an
   * inner table refuses `MODIFY SETTING`). Migration 004 gives points and its catalog the window.
   */
  readonly deduplicatedInserts: boolean;
  /**
   * `DELETE FROM t WHERE …` (lightweight deletes, 23.3+): rows are masked at once and the
   * statement returns when they are; older servers rewrite parts with `ALTER TABLE … DELETE`
   * mutations, which run in the background and are waited for.
   */
  readonly lightweightDelete: boolean;
  /** Column codecs: `CODEC(Delta, ZSTD(3))`, T64 (all there from 20.1; 18.16 has none). Migration 009 gives points its own. */
  readonly columnCodecs: boolean;
  /**
   * A column's own compression block sizes (`ALTER TABLE t MODIFY COLUMN c MODIFY SETTING
   * min_compress_block_size = …`, 24.1+). Migration 014 gives points' `task_id` larger blocks.
   */
  readonly columnSettings: boolean;
};

/** [major, minor] of a ClickHouse version string (`18.16.1`, `25.8.3.1`, `26.9.2.1`). */
export function parseVersion(version: string): [number, number] {
  const m = /^(\d+)\.(\d+)/.exec(version.trim());
  if (!m) throw new Error(`not a ClickHouse version: ${version}`);
  return [Number(m[1]), Number(m[2])];
}

const atLeast = (v: [number, number], major: number, minor: number) => v[0] > major || (v[0] === major && v[1] >= minor);

export function capabilities(version: string, databaseEngine: string): Capabilities {
  const v = parseVersion(version);
  const atomicDatabase = databaseEngine === 'Atomic';
  return {
    version,
    databaseEngine,
    atomicDatabase,
    exchangeTables: atomicDatabase && atLeast(v, 20, 1),
    knowsAsyncInsert: atLeast(v, 21, 11),
    insertDeduplicationToken: atLeast(v, 22, 2),
    deduplicatedInserts: atomicDatabase && atLeast(v, 22, 2),
    lightweightDelete: atLeast(v, 23, 3),
    columnCodecs: atLeast(v, 20, 1),
    columnSettings: atLeast(v, 24, 1),
  };
}

/**
 * Settings for every INSERT whose success must mean "stored whole, now visible": the sink's
 * exactly-once rests on one INSERT being one block. From 26.2 the server buffers and combines
 * inserts by default (`async_insert=1`), so it is turned off where the server knows it; an
 * older server does not know the name and would refuse it.
 */
export function synchronousInsertSettings(caps: Capabilities): Record<string, 0> {
  return caps.knowsAsyncInsert ? { async_insert: 0 } : {};
}

/**
 * Settings for an INSERT into a points table that a retry of the same block must not store
 * twice: the server drops a block whose token is in the table's deduplication window (kept for
 * the table and, through the dependent-view setting, for its catalog, which the view would
 * otherwise feed again). `token` names the block (its table and its Kafka range), never its
 * contents, so equal points from another range are stored. Nothing on servers without it.
 */
export function deduplicatedInsertSettings(caps: Capabilities, token: string): Record<string, string | 1> {
  if (!caps.deduplicatedInserts) return {};
  return { insert_deduplicate: 1, insert_deduplication_token: token, deduplicate_blocks_in_dependent_materialized_views: 1 };
}

/**
 * On a cluster, the replicas that must hold a projector's insert before it counts
 * (CLICKHOUSE_INSERT_QUORUM; 0: one server) and how long it waits for them. Every projection
 * that resumes from positions stored in its own tables (points, tasks, files) uses it.
 */
export type InsertQuorum = { readonly replicas: number; readonly timeoutMs: number };

export const NO_QUORUM: InsertQuorum = { replicas: 0, timeoutMs: 0 };

/**
 * Settings for a projector insert on a cluster: acknowledged only once `quorum` replicas hold the
 * block (insert_quorum, known since 18.16), so a replica answering reads after the writer died has
 * every acknowledged block. Nothing for 0 or 1 (one server).
 */
export function quorumInsertSettings(quorum: number, timeoutMs: number): Record<string, number> {
  return quorum >= 2 ? { insert_quorum: quorum, insert_quorum_timeout: timeoutMs } : {};
}

/**
 * Settings for reading the projector's positions under an insert quorum: a block whose quorum is
 * still pending (or failed) is not seen, so the positions never run ahead of what every replica
 * holds (select_sequential_consistency; the server refuses it on a replica behind the quorum).
 */
export function quorumReadSettings(quorum: number): Record<string, number> {
  return quorum >= 2 ? { select_sequential_consistency: 1 } : {};
}

const detected = new WeakMap<ClickHouseClient, Promise<Capabilities>>();

/**
 * The server's capabilities, asked once per client (`SELECT version()` and the engine of the
 * client's database) and kept; a failed probe is asked again next time.
 */
export function serverCapabilities(client: ClickHouseClient): Promise<Capabilities> {
  let found = detected.get(client);
  if (!found) {
    found = (async () => {
      const result = await client.query({
        query: 'SELECT version() AS version, (SELECT any(engine) FROM system.databases WHERE name = currentDatabase()) AS engine',
        format: 'JSONEachRow',
      });
      const [row] = await result.json<{ version: string; engine: string }>();
      if (!row) throw new Error('SELECT version() answered no row');
      return capabilities(row.version, row.engine);
    })();
    found.catch(() => detected.delete(client));
    detected.set(client, found);
  }
  return found;
}
