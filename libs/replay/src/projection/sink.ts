import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@meridian/clickhouse';
import { encodePointsBlock, insertPointsSql, type Segment } from './rows.ts';

/**
 * The ClickHouse side of the projector: the points table is the authority on what has been
 * projected. Every row carries the (partition, offset) of the PointBatch it came from, and
 * each insert is one Native block (all or nothing), so "max(kafka_offset) of a partition"
 * says exactly which batches are in: all up to it, none after it.
 */
export type PointsSink = {
  /** The highest PointBatch offset stored per partition; -1 for a partition with no rows. */
  maxOffsets(partitions: readonly number[]): Promise<Map<number, number>>;
  /** Writes every point of the segments as one INSERT (one block, one part). */
  insert(segments: readonly Segment[]): Promise<void>;
  /**
   * After an insert failed, its outcome is unknown until ClickHouse has finished with it:
   * waits until the failed insert is no longer running, so maxOffsets tells the truth.
   */
  settle(timeoutMs?: number): Promise<void>;
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `table` is `points` for the live projector, a generation table (points_g<N>) for a rebuild. */
export function createPointsSink(client: ClickHouseClient, table = 'points'): PointsSink {
  const insertSql = insertPointsSql(table);
  let unsettled: string | null = null;

  async function rows<T>(query: string): Promise<T[]> {
    return (await client.query({ query, format: 'JSONEachRow' })).json<T>();
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
      const found = await rows<{ p: number; o: string }>(
        `SELECT kafka_partition AS p, toString(max(kafka_offset)) AS o FROM ${table} WHERE kafka_partition IN (${list.join(', ')}) GROUP BY kafka_partition`,
      );
      for (const { p, o } of found) result.set(Number(p), Number(o));
      return result;
    },

    async insert(segments) {
      const queryId = randomUUID();
      const body = encodePointsBlock(segments);
      unsettled = queryId;
      const result = await client.exec({ query: insertSql, query_id: queryId, values: Readable.from([body]) });
      // The answer to an INSERT is empty; drain it so the socket goes back to the pool.
      for await (const _ of result.stream) { /* empty */ }
      unsettled = null;
    },

    async settle(timeoutMs = 300_000) {
      const queryId = unsettled;
      if (queryId === null) return;
      if (!UUID.test(queryId)) throw new Error(`unexpected query id ${queryId}`);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const running = await rows<{ n: string }>(`SELECT count() AS n FROM system.processes WHERE query_id = '${queryId}'`);
        if (Number(running[0]?.n ?? 0) === 0) break;
        if (Date.now() > deadline) throw new Error(`insert ${queryId} still running after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
      unsettled = null;
    },
  };
}
