import type { Capabilities } from '../capabilities.ts';
import type { ClickHouseClient } from '../client.ts';
import { quotedTable, rewriteInsertSettings } from '../points/delete-rows.ts';
import { EVERY_METRIC, MARKS } from './marks-sql.ts';
import { SEALED } from './sealed-sql.ts';

/** A deletion's range as it is marked: its metrics, its inclusive range, and what did it (its task). */
export type RollupMark = { readonly metrics: readonly string[]; readonly fromMs: number; readonly toMs: number; readonly cause: string };

/**
 * Marks a deletion's range in every metric (migration 012), once the rollups' buckets are rewritten
 * and before its task succeeds: a seal whose pass read the bucket before this row existed holds
 * fewer marks than the bucket now has and is never trusted again, whenever it is written. Written
 * again when the deletion is applied again (a crash): one more mark only voids the same seals.
 * `queryId` names the write as the deletion's others are (a swap's freeze waits for them).
 */
export async function markDeletion(client: ClickHouseClient, caps: Capabilities, mark: RollupMark, queryId: string): Promise<void> {
  if (mark.metrics.length === 0) return;
  await client.insert({
    table: MARKS,
    format: 'JSONEachRow',
    values: mark.metrics.map((metric_name) => ({ metric_name, from_ms: mark.fromMs, to_ms: mark.toMs, cause: mark.cause })),
    clickhouse_settings: rewriteInsertSettings(caps),
    query_id: queryId,
  });
}

/**
 * Voids every seal (a rebuild's swap, once the new generation's rollups are live): a mark of every
 * metric, then the sealed tables emptied. A pass under way that read its marks before the mark
 * writes seals that are never trusted, even after the truncation; one that read them after it
 * reads the new generation's counts. The truncation only frees the void rows.
 */
export async function voidEverySeal(client: ClickHouseClient, caps: Capabilities, cause: string): Promise<void> {
  await client.insert({
    table: MARKS,
    format: 'JSONEachRow',
    values: [{ metric_name: EVERY_METRIC, from_ms: 0, to_ms: 0, cause }],
    clickhouse_settings: rewriteInsertSettings(caps),
  });
  for (const table of Object.values(SEALED)) await client.command({ query: `TRUNCATE TABLE IF EXISTS ${quotedTable(table)}` });
}
