import { randomUUID } from 'node:crypto';
import { synchronousInsertSettings, type Capabilities } from '../capabilities.ts';
import { quoteIdentifier, type ClickHouseClient } from '../client.ts';
import { untilMutationsDone } from '../server-work.ts';

/**
 * The statements every deletion step shares (points, the catalog, the rollups): names as hex,
 * our table names only, a DELETE or a mutation waited for, and the table a view's rows are in.
 */

/**
 * A mutation's wait (the rewrite of every part of the table on 18.16) before the step fails and is
 * tried again: the retry waits for the same mutation (deleteRows), it never asks for another.
 */
const MUTATION_TIMEOUT_MS = 600_000;

/**
 * A string as SQL without its text: hex digits only. A mutation runs in the background, after
 * its request (and any external data) is gone, and 18.16 takes no query parameters, so the
 * metric names reach its WHERE this way: no user character is ever part of the SQL.
 */
export function hexString(text: string): string {
  return `unhex('${Buffer.from(text, 'utf8').toString('hex')}')`;
}

export const namesIn = (metrics: readonly string[]) => `metric_name IN (${metrics.map(hexString).join(', ')})`;

/** The statement that removes `where` from `table`: a lightweight DELETE where the server has it, else a mutation. */
export function deleteRowsSql(table: string, where: string, caps: Pick<Capabilities, 'lightweightDelete'>): string {
  const quoted = quotedTable(table);
  return caps.lightweightDelete ? `DELETE FROM ${quoted} WHERE ${where}` : `ALTER TABLE ${quoted} DELETE WHERE ${where}`;
}

/** Our own table names only, `.inner.<view>` included (18.16's storage of a view's rows). */
export function quotedTable(table: string): string {
  if (!/^(\.inner\.)?[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error(`not a table of ours: ${table}`);
  return `\`${table}\``;
}

export async function rows<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  return (await client.query({ query, format: 'JSONEachRow' })).json<T>();
}

/** The number of rows of `table` matching `where`. */
async function countWhere(client: ClickHouseClient, table: string, where: string): Promise<number> {
  const [row] = await rows<{ n: string }>(client, `SELECT toString(count()) AS n FROM ${quotedTable(table)} WHERE ${where}`);
  return Number(row?.n ?? 0);
}

/**
 * Removes `where` from `table` and returns once no reader sees those rows; returns how many rows
 * it selected. None is asked for when none is selected: on 18.16 a mutation rewrites every part of
 * the table, matching rows or not. A mutation of the table still under way (an earlier try of this
 * step whose wait ended, or a process that died waiting) is waited for before the rows are
 * counted, so a retry never queues a second rewrite of the whole table behind the first. A
 * lightweight DELETE waits for itself from 24.4 (lightweight_deletes_sync); before that, on 23.3 to
 * 24.3, only when asked with mutations_sync, which newer servers take too.
 */
export async function deleteRows(client: ClickHouseClient, table: string, where: string, caps: Capabilities, timeoutMs = MUTATION_TIMEOUT_MS): Promise<number> {
  await untilMutationsDone(client, table, timeoutMs);
  const selected = await countWhere(client, table, where);
  if (selected === 0) return 0;
  await client.command({ query: deleteRowsSql(table, where, caps), ...(caps.lightweightDelete ? { clickhouse_settings: { mutations_sync: '2' } } : {}) });
  if (!caps.lightweightDelete) await untilMutationsDone(client, table, timeoutMs);
  return selected;
}

/**
 * Where a view's rows are: the table itself, or the inner table of a view with an engine of its
 * own (18.16's migrations 002 and 010; on an Atomic database the name is an explicit table).
 */
export async function storageOf(client: ClickHouseClient, table: string): Promise<string> {
  if (table.startsWith('.inner.')) return quotedTable(table) && table;
  quoteIdentifier(table);
  const [row] = await rows<{ engine: string }>(client, `SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = '${table}'`);
  if (row === undefined) throw new Error(`no table ${table}`);
  return row.engine === 'MaterializedView' ? `.inner.${table}` : table;
}

/**
 * The settings of an insert that writes derived states anew (the catalog's, a rollup's): waited
 * for, and where the table keeps insert tokens, not taken for a retry of equal states written by
 * an earlier deletion or an earlier run of this one.
 */
export function rewriteInsertSettings(caps: Capabilities): Record<string, 0> {
  return { ...synchronousInsertSettings(caps), ...(caps.deduplicatedInserts ? { insert_deduplicate: 0 } : {}) };
}

/**
 * The name of a deletion's write into `points`' derived tables (its catalog rows, its rollup
 * buckets) or its seals: named as a staged seal's writes are, so that a projector taking the
 * partition over after a crash (the sink's settle) and a swap's freeze wait for one still running
 * in ClickHouse, which could otherwise land after the deletion was done again.
 */
export const deletionWriteId = (points: string) => `points-attach:${points}:${randomUUID()}`;
