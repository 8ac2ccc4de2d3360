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

/** The points partitions in which the projector has applied a deletion's marker (each one's row in points_seals). */
export async function deletionAppliedPartitions(client: ClickHouseClient, taskId: string): Promise<Set<number>> {
  const found = await rows<{ p: number }>(client, `SELECT DISTINCT kafka_partition AS p FROM points_seals WHERE task_id = ${hexString(taskId)}`);
  return new Set(found.map((r) => Number(r.p)));
}
