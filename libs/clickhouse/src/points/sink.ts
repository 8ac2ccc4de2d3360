import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { BlockBuffer, encodePointsBlock, insertPointsSql, insertToken, STAGE_BLOCK_COLUMNS, type Segment } from '@meridian/projection';
import {
  deduplicatedInsertSettings,
  NO_QUORUM,
  quorumInsertSettings,
  quorumReadSettings,
  serverCapabilities,
  synchronousInsertSettings,
  type InsertQuorum,
} from '../capabilities.ts';
import type { ClickHouseClient } from '../client.ts';
import { noneRunningWithin } from '../server-work.ts';
import { ROLLUPS, rollupStatesSql, type Resolution } from '../rollups/sql.ts';

/**
 * The ClickHouse side of the projector: the points table is the authority on what has been
 * projected. Every row carries the (partition, offset) of the PointBatch it came from, and
 * each insert is one Native block (all or nothing), so "max(kafka_offset) of a partition"
 * says exactly which batches are in: all up to it, none after it. Where the server keeps insert
 * tokens (capabilities.ts), each insert also carries its block's token, a second guard.
 */
export type PointsSink = {
  /**
   * The position per partition: the highest PointBatch offset stored, or the highest staged
   * seal recorded in the seals table if that is later (a staged upload's rows come in
   * at its seal); -1 for a partition with neither.
   */
  maxOffsets(partitions: readonly number[]): Promise<Map<number, number>>;
  /**
   * Writes every point of the segments as one INSERT (one block, one part). `signal` gives the
   * request up (a stage's writer that waited too long): unless the server had the whole block
   * by then, nothing is stored; if it had, the insert runs on, named (INSERT_ID) so it can be waited for.
   */
  insert(segments: readonly Segment[], signal?: AbortSignal): Promise<void>;
  /**
   * After an insert failed, its outcome is unknown until ClickHouse has finished with it:
   * waits until the failed insert is no longer running, so maxOffsets tells the truth.
   */
  settle(timeoutMs?: number): Promise<void>;
  /**
   * After an insert whose outcome was unknown, once its segments are stored (and on taking over
   * partitions, for the batch at each one's position): adds to the metric catalog what it lacks of
   * the metrics of the point batches at these positions; returns how many points it added (0 almost always).
   */
  repairCatalog(batches: readonly BatchPosition[]): Promise<number>;
};

/** Where a PointBatch is in the points topic (and so in the points table). */
export type BatchPosition = Pick<Segment, 'partition' | 'offset'>;

/**
 * A quorum insert refused before anything was written: too few live replicas (285), or another
 * quorum insert of the table still pending (286). Its outcome is known: nothing stored. Not so
 * when the refusal came "while pushing to view": the points part was stored, and the catalog's
 * inner table (another quorum table, which the other workers' inserts also hold) refused its share.
 */
export function refusedBeforeWriting(error: unknown): boolean {
  const message = String((error as Error)?.message ?? '');
  return /\bCode: 28[56]\b/.test(message) && !message.includes('while pushing to view');
}

/**
 * Every projector insert is named `points-insert:<table>:<uuid>`, and every staged share's
 * attach (and the catalog insert after it) `points-attach:<table>:<uuid>` (stage.ts), so those
 * still running can be found.
 */
const INSERT_ID = /^points-(insert|attach):[A-Za-z_][A-Za-z0-9_]*:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type PointsSinkOptions = {
  readonly quorum?: InsertQuorum;
  /**
   * The table of staged seals that counts in the position (points_seals for the live table;
   * migration 007). Absent: the position is the points table's alone (a stage, a generation).
   */
  readonly sealsTable?: string;
  /**
   * The catalog of `table` that repairCatalog completes (the view metric_catalog, or a table of
   * the catalog's data); `metric_catalog` for `points`. Absent for another table: nothing to repair.
   */
  readonly catalogTable?: string;
  /** The rollups (migration 010) repairCatalog completes too, by resolution; `points_1m` and `points_1h` for `points`. */
  readonly rollupTables?: Readonly<Partial<Record<Resolution, string>>>;
  /**
   * Where its blocks are encoded: a writer that spreads its inserts over several sinks, one at a
   * time (a staged upload's stages), gives them one. Absent: the sink keeps its own.
   */
  readonly blocks?: BlockBuffer;
  /**
   * The one task and partition every row of this table has: a stage made by stage.ts, whose
   * table holds them as column defaults. Its blocks leave those two columns out, and a segment
   * of another task or partition is refused.
   */
  readonly share?: { readonly taskId: string; readonly partition: number };
};

/** `table` is `points` for the live projector, a generation table (points_g<N>) for a rebuild. */
export function createPointsSink(client: ClickHouseClient, table = 'points', options: PointsSinkOptions = {}): PointsSink {
  const quorum = options.quorum ?? NO_QUORUM;
  const blocks = options.blocks ?? new BlockBuffer();
  const share = options.share;
  const columns = share === undefined ? undefined : STAGE_BLOCK_COLUMNS;
  const insertSql = insertPointsSql(table, columns);
  let unsettled: string | null = null;
  const idPrefix = `points-insert:${table}:`;
  const attachPrefix = `points-attach:${table}:`;

  async function rows<T>(query: string, settings: Record<string, number> = {}): Promise<T[]> {
    return (await client.query({ query, format: 'JSONEachRow', clickhouse_settings: settings })).json<T>();
  }

  const rollupTables: Readonly<Partial<Record<Resolution, string>>> =
    options.rollupTables ?? (table === 'points' ? { '1m': ROLLUPS['1m'].table, '1h': ROLLUPS['1h'].table } : {});

  /**
   * The rollups' share of stored blocks whose views did not run (as for the catalog, below): per
   * bucket the blocks' rows touch, a rollup counting the points' rows less the blocks' lacks
   * exactly them, and gets their states; one counting them all is complete. `blocks` is a list of
   * (partition, offset) integer pairs.
   */
  async function repairRollups(blocks: string): Promise<void> {
    for (const [resolution, rollup] of Object.entries(rollupTables) as [Resolution, string][]) {
      if (!/^[.A-Za-z_][.A-Za-z0-9_]*$/.test(rollup)) throw new Error(`not a rollup table: ${rollup}`);
      const w = ROLLUPS[resolution].stepMs;
      const ofBlocks = `FROM ${table} WHERE (kafka_partition, kafka_offset) IN (${blocks})`;
      const touched = `SELECT metric_name, intDiv(ts, ${w}) * ${w} AS bucket, count() AS b ${ofBlocks} GROUP BY metric_name, bucket`;
      const keys = `SELECT metric_name, bucket FROM (${touched})`;
      const stored = `SELECT metric_name, intDiv(ts, ${w}) * ${w} AS bucket, count() AS p FROM ${table} WHERE (metric_name, intDiv(ts, ${w}) * ${w}) IN (${keys}) GROUP BY metric_name, bucket`;
      const counted = `SELECT metric_name, bucket, countMerge(rows) AS r FROM \`${rollup}\` WHERE (metric_name, bucket) IN (${keys}) GROUP BY metric_name, bucket`;
      const lacking = `SELECT metric_name, bucket FROM (SELECT metric_name, bucket, b, p FROM (${touched}) AS k ANY LEFT JOIN (${stored}) AS s USING metric_name, bucket) AS ks ANY LEFT JOIN (${counted}) AS c USING metric_name, bucket WHERE r = p - b`;
      const queryId = `${idPrefix}${randomUUID()}`;
      try {
        await client.command({
          query: `INSERT INTO \`${rollup}\` ${rollupStatesSql(resolution, `(SELECT * ${ofBlocks} AND (metric_name, intDiv(ts, ${w}) * ${w}) IN (${lacking}))`)}`,
          query_id: queryId,
          clickhouse_settings: quorumInsertSettings(quorum.replicas, quorum.timeoutMs),
        });
      } catch (error) {
        await awaitGone([queryId], 300_000);
        throw error;
      }
    }
  }

  /** Waits until none of the given inserts is running any more (their outcome is then final). */
  async function awaitGone(ids: readonly string[], timeoutMs: number): Promise<void> {
    const waiting = ids.filter((id) => INSERT_ID.test(id));
    if (waiting.length === 0) return;
    if (!(await noneRunningWithin(client, `query_id IN (${waiting.map((id) => `'${id}'`).join(', ')})`, timeoutMs))) {
      throw new Error(`inserts among ${waiting.join(', ')} still running after ${timeoutMs} ms`);
    }
  }

  return {
    async maxOffsets(partitions) {
      const result = new Map<number, number>(partitions.map((p) => [p, -1]));
      if (partitions.length === 0) return result;
      // Partitions are validated integers (never user text), so they may be part of the SQL.
      const list = partitions.map((p) => {
        if (!Number.isInteger(p) || p < 0 || p > 65535) throw new Error(`not a partition number: ${p}`);
        return String(p);
      });
      // An insert sent by a process that then died (SIGKILL) keeps running in ClickHouse and may
      // still commit: the positions are only true once every insert already under way is done.
      // So may an ATTACH of a staged share, whose seal is recorded only after it.
      const prefixes = options.sealsTable === undefined ? [idPrefix] : [idPrefix, attachPrefix];
      const underWay = await rows<{ id: string }>(
        `SELECT query_id AS id FROM system.processes WHERE ${prefixes.map((p) => `startsWith(query_id, '${p}')`).join(' OR ')}`,
      );
      await awaitGone(
        underWay.map((r) => r.id),
        300_000,
      );
      const found = await rows<{ p: number; o: string }>(
        `SELECT kafka_partition AS p, toString(max(kafka_offset)) AS o FROM ${table} WHERE kafka_partition IN (${list.join(', ')}) GROUP BY kafka_partition`,
        // Under a quorum, a block not yet on every replica is not counted as stored: its retry,
        // the same block, is then dropped by the replicas' block deduplication if it did land.
        quorumReadSettings(quorum.replicas),
      );
      for (const { p, o } of found) result.set(Number(p), Number(o));
      if (options.sealsTable !== undefined) {
        const sealed = await rows<{ p: number; o: string }>(
          `SELECT kafka_partition AS p, toString(max(seal_offset)) AS o FROM ${options.sealsTable} WHERE kafka_partition IN (${list.join(', ')}) GROUP BY kafka_partition`,
          quorumReadSettings(quorum.replicas),
        );
        for (const { p, o } of sealed) result.set(Number(p), Math.max(result.get(Number(p))!, Number(o)));
      }
      return result;
    },

    async insert(segments, signal) {
      if (share !== undefined) {
        const other = segments.find((s) => s.batch.task_id !== share.taskId || s.partition !== share.partition);
        if (other !== undefined)
          throw new Error(
            `${table} holds task ${share.taskId} on partition ${share.partition} only, not task ${other.batch.task_id} on partition ${other.partition}`,
          );
      }
      const queryId = `${idPrefix}${randomUUID()}`;
      const caps = await serverCapabilities(client);
      // One INSERT is one block stored whole only when the server does not buffer it (async_insert);
      // where the table keeps insert tokens, a retry of a block stored after all is dropped.
      // On a cluster, acknowledged means on every replica of the quorum.
      const settings = {
        ...synchronousInsertSettings(caps),
        ...deduplicatedInsertSettings(caps, insertToken(table, segments)),
        ...quorumInsertSettings(quorum.replicas, quorum.timeoutMs),
      };
      unsettled = queryId;
      const body = encodePointsBlock(segments, blocks, columns);
      let answered = false;
      try {
        const result = await client.exec({
          query: insertSql,
          query_id: queryId,
          values: Readable.from([body]),
          clickhouse_settings: settings,
          ...(signal === undefined ? {} : { abort_signal: signal }),
        });
        // The answer to an INSERT is empty; drain it so the socket goes back to the pool.
        for await (const _ of result.stream) {
          /* empty */
        }
        answered = true;
      } finally {
        blocks.giveBack(body, answered);
      }
      unsettled = null;
    },

    /**
     * The catalog (migration 002) is a view written by the points' own INSERT, on the server,
     * after the points part (and after its quorum wait). A server killed between the two leaves
     * the points stored and the catalog short of that block; the retry of the same block is then
     * dropped as a duplicate, and a duplicate runs no view. The projector is the only writer of
     * its partitions' metrics and has settled its inserts, so for those metrics the catalog must
     * count what `points` counts: the difference is added as one aggregate state per metric (a
     * count of the missing points, the metric's first and last timestamps, which merge without
     * harm). Metrics are found from the batches' positions (integers), never named in the SQL.
     */
    async repairCatalog(batches) {
      const catalog = options.catalogTable ?? (table === 'points' ? 'metric_catalog' : null);
      if (catalog === null || batches.length === 0) return 0;
      if (!/^[.A-Za-z_][.A-Za-z0-9_]*$/.test(catalog)) throw new Error(`not a catalog table: ${catalog}`);
      if (quorum.replicas >= 2) {
        // The writer holds every part the replication log has (its own and the other replicas').
        for (const t of ['points', '`.inner.metric_catalog`']) await client.command({ query: `SYSTEM SYNC REPLICA ${t}` });
      }
      const blocks = batches.map((s) => {
        if (!Number.isInteger(s.partition) || !Number.isInteger(s.offset)) throw new Error('not a segment position');
        return `(${s.partition}, ${s.offset})`;
      });
      const metrics = `SELECT DISTINCT metric_name FROM ${table} WHERE (kafka_partition, kafka_offset) IN (${blocks.join(', ')})`;
      const short = `SELECT metric_name, p.n - c.n AS missing, first, last FROM
          (SELECT metric_name, count() AS n, min(ts) AS first, max(ts) AS last FROM ${table} WHERE metric_name IN (${metrics}) GROUP BY metric_name) AS p
          ANY LEFT JOIN (SELECT metric_name, countMerge(points) AS n FROM \`${catalog}\` WHERE metric_name IN (${metrics}) GROUP BY metric_name) AS c
          USING metric_name WHERE p.n > c.n`;
      await repairRollups(blocks.join(', '));
      const missing = await rows<{ missing: string }>(short);
      const total = missing.reduce((sum, r) => sum + Number(r.missing), 0);
      if (total === 0) return 0;
      // Named like an insert, so the positions wait for one still running after its client died,
      // and its outcome is known before this fails: a retry must not add the difference again.
      const queryId = `${idPrefix}${randomUUID()}`;
      try {
        await client.command({
          query: `INSERT INTO \`${catalog}\` SELECT metric_name, countState() AS points, minState(first) AS first_ts, maxState(last) AS last_ts
            FROM (SELECT metric_name, first, last, arrayJoin(range(toUInt64(missing))) AS k FROM (${short})) GROUP BY metric_name`,
          query_id: queryId,
          clickhouse_settings: quorumInsertSettings(quorum.replicas, quorum.timeoutMs),
        });
      } catch (error) {
        await awaitGone([queryId], 300_000);
        throw error;
      }
      return total;
    },

    async settle(timeoutMs = 300_000) {
      const queryId = unsettled;
      if (queryId === null) return;
      if (!INSERT_ID.test(queryId)) throw new Error(`unexpected query id ${queryId}`);
      await awaitGone([queryId], timeoutMs);
      unsettled = null;
    },
  };
}
