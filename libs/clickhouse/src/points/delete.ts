import { randomUUID } from 'node:crypto';
import { serverCapabilities, synchronousInsertSettings, type Capabilities } from '../capabilities.ts';
import { quoteIdentifier, type ClickHouseClient } from '../client.ts';
import { nameRuns } from '@meridian/domain';
import { int } from '../download/filter-sql.ts';

/**
 * A deletion's marker as the projector applies it: the rows of `metrics` with a timestamp in
 * [fromMs, toMs] that came from `partition` below `offset` (projected before the marker).
 */
export type PointsDeletion = {
  readonly taskId: string;
  readonly partition: number;
  readonly offset: number;
  readonly metrics: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
};

/** The tables a deletion reaches: points, its catalog, and the table whose rows count in the position. */
export type DeletionTargets = { readonly points: string; readonly catalog: string; readonly seals: string };

export const LIVE_DELETION_TARGETS: DeletionTargets = { points: 'points', catalog: 'metric_catalog', seals: 'points_seals' };

/**
 * Bytes of names per statement: their hex literals, twice as long, stay well below the server's
 * max_query_size (256 KiB by default, 18.16 included).
 */
export const SQL_NAME_BYTES = 48 * 1024;

/** A mutation's wait: the rewrite of every part of points that holds one of the metrics. */
const MUTATION_TIMEOUT_MS = 600_000;

/**
 * A string as SQL without its text: hex digits only. A mutation runs in the background, after
 * its request (and any external data) is gone, and 18.16 takes no query parameters, so the
 * metric names reach its WHERE this way: no user character is ever part of the SQL.
 */
export function hexString(text: string): string {
  return `unhex('${Buffer.from(text, 'utf8').toString('hex')}')`;
}

const namesIn = (metrics: readonly string[]) => `metric_name IN (${metrics.map(hexString).join(', ')})`;

/** The rows of points a deletion removes: its metrics and range, from its partition, before its marker. */
export function deletionWhere(d: PointsDeletion): string {
  return `${namesIn(d.metrics)} AND ts >= ${int(d.fromMs)} AND ts <= ${int(d.toMs)} AND kafka_partition = ${int(d.partition)} AND kafka_offset < ${int(d.offset)}`;
}

/** The statement that removes `where` from `table`: a lightweight DELETE where the server has it, else a mutation. */
export function deleteRowsSql(table: string, where: string, caps: Pick<Capabilities, 'lightweightDelete'>): string {
  const quoted = quotedTable(table);
  return caps.lightweightDelete ? `DELETE FROM ${quoted} WHERE ${where}` : `ALTER TABLE ${quoted} DELETE WHERE ${where}`;
}

/** Our own table names only, `.inner.<view>` included (18.16's storage of a view's rows). */
function quotedTable(table: string): string {
  if (!/^(\.inner\.)?[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error(`not a table of ours: ${table}`);
  return `\`${table}\``;
}

async function rows<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  return (await client.query({ query, format: 'JSONEachRow' })).json<T>();
}

/** Waits until no mutation of `table` is left undone (a lightweight DELETE returns when done). */
async function untilDone(client: ClickHouseClient, table: string): Promise<void> {
  quotedTable(table);
  const deadline = Date.now() + MUTATION_TIMEOUT_MS;
  for (;;) {
    const [row] = await rows<{ n: string }>(
      client,
      `SELECT toString(count()) AS n FROM system.mutations WHERE database = currentDatabase() AND table = '${table}' AND is_done = 0`,
    );
    if (Number(row?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`mutations of ${table} not done within ${MUTATION_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function deleteRows(client: ClickHouseClient, table: string, where: string, caps: Capabilities): Promise<void> {
  await client.command({ query: deleteRowsSql(table, where, caps) });
  if (!caps.lightweightDelete) await untilDone(client, table);
}

/** Where a catalog's rows are: the table itself, or the inner table of a view with an engine of its own (18.16's migration 002). */
async function catalogStorage(client: ClickHouseClient, catalog: string): Promise<string> {
  quoteIdentifier(catalog);
  const [row] = await rows<{ engine: string }>(client, `SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = '${catalog}'`);
  if (row === undefined) throw new Error(`no catalog table ${catalog}`);
  return row.engine === 'MaterializedView' ? `.inner.${catalog}` : catalog;
}

/**
 * Applies a deletion's marker (in runs of names that fit a statement), then records it at the marker's offset in the seals table, which
 * counts in the projector's position. Every step can run again: a projector killed anywhere in it
 * reads the marker again (it is above the position until recorded) and redoes it whole, and the
 * batches re-read before it, whose rows it may have removed already, are stored and removed again.
 *
 * The catalog keeps partial aggregate states no mutation can take points out of, so the metrics'
 * catalog rows are deleted and written anew from what points holds. A metric's points all come
 * from one points partition (its name is the key), whose projector is the one applying the
 * marker: nothing inserts points of these metrics meanwhile.
 */
export async function applyDeletion(client: ClickHouseClient, targets: DeletionTargets, d: PointsDeletion): Promise<void> {
  const caps = await serverCapabilities(client);
  for (const metrics of nameRuns(d.metrics, SQL_NAME_BYTES)) await deleteRun(client, targets, { ...d, metrics }, caps);
  // Named as a staged seal's record is: a swap's freeze waits for every write of a seal under way (replay's freezeLive).
  await client.insert({
    table: targets.seals,
    format: 'JSONEachRow',
    values: [{ kafka_partition: d.partition, seal_offset: d.offset, task_id: d.taskId, attempt: '' }],
    query_id: `points-attach:${targets.points}:${randomUUID()}`,
  });
}

/** The statements of one run of a deletion's names: its points, then its metrics' catalog rows. */
async function deleteRun(client: ClickHouseClient, targets: DeletionTargets, d: PointsDeletion, caps: Capabilities): Promise<void> {
  // On 18.16 a mutation rewrites every part of the table, matching rows or not: a deletion that
  // selects nothing now (an empty range, or one applied again after a crash) asks for none. The
  // catalog is written anew all the same: a crash may have come between the two.
  const [selected] = await rows<{ n: string }>(client, `SELECT toString(count()) AS n FROM ${quotedTable(targets.points)} WHERE ${deletionWhere(d)}`);
  if (Number(selected?.n ?? 0) > 0) await deleteRows(client, targets.points, deletionWhere(d), caps);
  // The catalog's old rows are deleted and the new ones inserted right after: a mutation reaches
  // only the parts that existed when it was asked, so on 18.16 it is waited for after the insert
  // (the metrics are missing from the catalog for the insert's time, not the mutation's).
  const storage = await catalogStorage(client, targets.catalog);
  await client.command({ query: deleteRowsSql(storage, namesIn(d.metrics), caps) });
  await client.command({
    query: `INSERT INTO ${quotedTable(targets.catalog)} SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts
      FROM ${quotedTable(targets.points)} WHERE ${namesIn(d.metrics)} GROUP BY metric_name`,
    // Where the catalog keeps insert tokens, equal states written by an earlier deletion must not be taken for a retry.
    clickhouse_settings: { ...synchronousInsertSettings(caps), ...(caps.deduplicatedInserts ? { insert_deduplicate: 0 } : {}) },
  });
  if (!caps.lightweightDelete) await untilDone(client, storage);
}
