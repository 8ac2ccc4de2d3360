import type { ClickHouseClient } from '../client.ts';
import { int } from '../download/filter-sql.ts';
import { nameRuns } from '@meridian/domain';
import { hexString, SQL_NAME_BYTES } from './delete.ts';
import { rows } from './delete-rows.ts';

/** Every metric of the catalog with its first timestamp: what retention may reach. */
export async function catalogFirsts(client: ClickHouseClient): Promise<Map<string, number>> {
  const found = await rows<{ name: string; first: string }>(
    client,
    'SELECT metric_name AS name, toString(minMerge(first_ts)) AS first FROM metric_catalog GROUP BY metric_name',
  );
  return new Map(found.map((r) => [r.name, Number(r.first)]));
}

/** Points of these metrics with a timestamp below `cutoff` in points now. */
export async function countOlder(client: ClickHouseClient, metrics: readonly string[], cutoff: number): Promise<number> {
  let total = 0;
  for (const run of nameRuns(metrics, SQL_NAME_BYTES)) {
    const names = run.map(hexString).join(', ');
    const [row] = await rows<{ n: string }>(client, `SELECT toString(count()) AS n FROM points WHERE metric_name IN (${names}) AND ts < ${int(cutoff)}`);
    total += Number(row?.n ?? 0);
  }
  return total;
}

/**
 * For each of these deletions, the points partitions in which the projector has applied its
 * marker (each one's row in points_seals); a deletion applied nowhere yet is absent. One scan of
 * the seals (a row per seal) for every deletion a retention pass waits for.
 */
export async function deletionAppliedPartitions(client: ClickHouseClient, taskIds: readonly string[]): Promise<Map<string, Set<number>>> {
  const applied = new Map<string, Set<number>>();
  if (taskIds.length === 0) return applied;
  const found = await rows<{ task_id: string; p: number }>(
    client,
    `SELECT DISTINCT task_id, kafka_partition AS p FROM points_seals WHERE task_id IN (${taskIds.map(hexString).join(', ')})`,
  );
  for (const r of found) {
    const partitions = applied.get(r.task_id) ?? new Set<number>();
    partitions.add(Number(r.p));
    applied.set(r.task_id, partitions);
  }
  return applied;
}
