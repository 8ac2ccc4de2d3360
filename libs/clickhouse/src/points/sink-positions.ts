import { quorumReadSettings } from '../capabilities.ts';
import type { SinkContext } from './sink-context.ts';

/** PointsSink.maxOffsets: the position per partition, once every insert (and attach) under way is done. */
export async function maxOffsets(ctx: SinkContext, partitions: readonly number[]): Promise<Map<number, number>> {
  const { table, options, quorum, idPrefix, attachPrefix, rows, awaitGone } = ctx;
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
}
