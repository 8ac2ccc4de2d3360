import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Segment } from '@meridian/projection';
import { BlockBuffer, encodePointsBlock, insertPointsSql, insertToken, STAGE_BLOCK_COLUMNS } from './native-block.ts';
import { deduplicatedInsertSettings, quorumInsertSettings, serverCapabilities, synchronousInsertSettings, type InsertQuorum } from '../capabilities.ts';
import type { ClickHouseClient } from '../client.ts';
import type { Resolution } from '../rollups/sql.ts';
import { INSERT_ID, sinkContext } from './sink-context.ts';
import { maxOffsets } from './sink-positions.ts';
import { repairCatalog } from './sink-repair.ts';

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
  const ctx = sinkContext(client, table, options);
  const { quorum, idPrefix, awaitGone } = ctx;
  const blocks = options.blocks ?? new BlockBuffer();
  const share = options.share;
  const columns = share === undefined ? undefined : STAGE_BLOCK_COLUMNS;
  const insertSql = insertPointsSql(table, columns);
  let unsettled: string | null = null;

  return {
    maxOffsets: (partitions) => maxOffsets(ctx, partitions),

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

    repairCatalog: (batches) => repairCatalog(ctx, batches),

    async settle(timeoutMs = 300_000) {
      const queryId = unsettled;
      if (queryId === null) return;
      if (!INSERT_ID.test(queryId)) throw new Error(`unexpected query id ${queryId}`);
      await awaitGone([queryId], timeoutMs);
      unsettled = null;
    },
  };
}
