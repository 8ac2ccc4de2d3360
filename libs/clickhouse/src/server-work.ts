import { quoteIdentifier, type ClickHouseClient } from './client.ts';

/**
 * Work the server does after (or apart from) the request that started it, waited for by
 * polling the system table that lists it: a query still running after its client gave up on
 * it, a mutation (ALTER … DELETE/UPDATE) run in the background. 18.16 has neither
 * `mutations_sync` nor a way to wait on a query id.
 */

/** Whether `countSql` (a count of what is still under way) answers 0 within timeoutMs, asked every 100 ms. */
async function noneLeftWithin(client: ClickHouseClient, countSql: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await (await client.query({ query: `SELECT toString((${countSql})) AS n`, format: 'JSONEachRow' })).json<{ n: string }>();
    if (Number(row?.n ?? 0) === 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether, within timeoutMs, no query that `filter` selects in system.processes is running (a filter of our own names, never user text). */
export function noneRunningWithin(client: ClickHouseClient, filter: string, timeoutMs: number): Promise<boolean> {
  return noneLeftWithin(client, `SELECT count() FROM system.processes WHERE ${filter}`, timeoutMs);
}

/**
 * Waits until no mutation of `table` is left undone, at most `timeoutMs`. A mutation whose
 * WHERE reads another table must finish before that other table is mutated in turn: its
 * subquery is evaluated as each part is rewritten, not when the ALTER is accepted.
 */
export async function untilMutationsDone(client: ClickHouseClient, table: string, timeoutMs: number): Promise<void> {
  // One of our own table names, a view's `.inner.` storage included (18.16 takes no query
  // parameters): anything else is refused.
  quoteIdentifier(table.replace(/^\.inner\./, ''));
  const undone = `SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = '${table}' AND is_done = 0`;
  if (!(await noneLeftWithin(client, undone, timeoutMs))) throw new Error(`mutations of ${table} not done within ${timeoutMs} ms`);
}
