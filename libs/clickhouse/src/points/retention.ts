import type { ClickHouseClient } from '../client.ts';
import { int } from '../download/filter-sql.ts';
import { hexString } from './delete.ts';

/** Names per count query: each is a literal in its SQL (hexString), well below the server's query size. */
const NAMES_PER_QUERY = 500;

async function rows<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  return (await client.query({ query, format: 'JSONEachRow' })).json<T>();
}

/** Every metric of the catalog with its first timestamp: what retention may reach. */
export async function catalogFirsts(client: ClickHouseClient): Promise<Map<string, number>> {
  const found = await rows<{ name: string; first: string }>(client, 'SELECT metric_name AS name, toString(minMerge(first_ts)) AS first FROM metric_catalog GROUP BY metric_name');
  return new Map(found.map((r) => [r.name, Number(r.first)]));
}

/** Points of these metrics with a timestamp below `cutoff` in points now. */
export async function countOlder(client: ClickHouseClient, metrics: readonly string[], cutoff: number): Promise<number> {
  let total = 0;
  for (let i = 0; i < metrics.length; i += NAMES_PER_QUERY) {
    const names = metrics.slice(i, i + NAMES_PER_QUERY).map(hexString).join(', ');
    const [row] = await rows<{ n: string }>(client, `SELECT toString(count()) AS n FROM points WHERE metric_name IN (${names}) AND ts < ${int(cutoff)}`);
    total += Number(row?.n ?? 0);
  }
  return total;
}
