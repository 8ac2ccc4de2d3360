import { quoteIdentifier, type ClickHouseClient } from './client.ts';

/**
 * Waits until no mutation of `table` (ALTER … DELETE/UPDATE, run in the background) is left
 * undone, polling system.mutations, at most `timeoutMs`. A mutation whose WHERE reads another
 * table must finish before that other table is mutated in turn (its subquery is evaluated as
 * each part is rewritten, not when the ALTER is accepted), and 18.16 has no `mutations_sync`.
 */
export async function untilMutationsDone(client: ClickHouseClient, table: string, timeoutMs: number): Promise<void> {
  quoteIdentifier(table); // one of our own table names (18.16 takes no query parameters): anything else is refused
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await (await client.query({
      query: `SELECT toString(count()) AS n FROM system.mutations WHERE database = currentDatabase() AND table = '${table}' AND is_done = 0`,
      format: 'JSONEachRow',
    })).json<{ n: string }>();
    if (Number(rows[0]?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`mutations of ${table} not done within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
