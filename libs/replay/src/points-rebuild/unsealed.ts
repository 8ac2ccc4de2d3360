import { quoteIdentifier, ROLLUPS, serverCapabilities, untilMutationsDone, type ClickHouseClient, type Resolution } from '@meridian/clickhouse';
import { isUuid } from '@meridian/domain';
import { catalogDefinition, forgetInsertTokensSql, q, viewDefinition } from '../generations.ts';

/**
 * sealedOnly: per partition, the offsets of the batches of each upload not sealed there yet.
 * One upload is one transaction over several partitions, each sealed on its own; a cut in
 * time can fall between its seals. Unsealed in any partition, it goes from every partition.
 */
export class OpenUploads {
  private readonly open: Map<number, Map<string, number[]>>;

  constructor(partitions: readonly number[]) {
    this.open = new Map(partitions.map((p) => [p, new Map()]));
  }

  /** A batch of an upload, stored at this offset. */
  batch(p: number, taskId: string, offset: number): void {
    const tasks = this.open.get(p)!;
    const offsets = tasks.get(taskId) ?? [];
    offsets.push(offset);
    tasks.set(taskId, offsets);
  }

  /** The upload's seal in this partition: its batches there are kept. */
  sealed(p: number, taskId: string): void {
    this.open.get(p)!.delete(taskId);
  }

  /** The uploads unsealed in some partition, and how many batches they left in all. */
  doomed(): { tasks: Set<string>; batches: number } {
    const tasks = new Set<string>();
    let batches = 0;
    for (const open of this.open.values()) {
      for (const [task, offsets] of open) {
        tasks.add(task);
        batches += offsets.length;
      }
    }
    return { tasks, batches };
  }
}

/**
 * Removes the uploads a cut leaves unsealed from the table, and keeps its catalog and rollups
 * with it (deleting rows reaches neither). Returns how many batches went.
 */
export async function removeUnsealed(
  input: { readonly clickhouse: ClickHouseClient; readonly table: string; readonly catalog?: string; readonly rollups?: Readonly<Record<Resolution, string>> },
  open: OpenUploads,
): Promise<number> {
  const { tasks: doomed, batches: unsealedBatches } = open.doomed();
  if (doomed.size > 0) {
    if (input.catalog === undefined) throw new Error(`a rebuild into ${input.table} that deletes unsealed uploads needs its catalog table`);
    await deleteUploads(input.clickhouse, input.table, [...doomed]);
    // The positions are back before the deleted batches: a catch-up projects them again, in
    // blocks whose tokens the table and its catalog must not hold any more.
    const rollups = Object.entries(input.rollups ?? {}).map(([resolution, table]) => ({ view: ROLLUPS[resolution as Resolution].table, table }));
    const rollupTargets = Object.fromEntries(rollups.map((r) => [r.view, r.table]));
    for (const statement of forgetInsertTokensSql(input.table, input.catalog, await serverCapabilities(input.clickhouse), undefined, rollupTargets)) {
      await input.clickhouse.command({ query: statement });
    }
    await recomputeCatalog(input.clickhouse, input.table, input.catalog);
    for (const { view, table } of rollups) await recomputeDerived(input.clickhouse, table, viewDefinition(view).select(input.table));
  }
  return unsealedBatches;
}

/**
 * Rewrites a catalog table from its points table, after rows were deleted (a mutation reaches
 * neither the view nor the catalog's partial states). The rows are the view's own SELECT
 * (migration 002: countState/minState/maxState per metric), so the states are the ones the
 * view writes. Only for a table nothing else writes into: the rebuild is its sole writer.
 */
async function recomputeCatalog(client: ClickHouseClient, table: string, catalog: string): Promise<void> {
  await recomputeDerived(client, catalog, catalogDefinition().select(table));
}

/** A table derived from a points table by a view (its catalog, a rollup) rewritten from the view's own SELECT, as recomputeCatalog. */
async function recomputeDerived(client: ClickHouseClient, derived: string, select: string): Promise<void> {
  await client.command({ query: `TRUNCATE TABLE ${q(derived)}` });
  await client.command({ query: `INSERT INTO ${q(derived)} ${select}` });
}

/**
 * Deletes every row of these uploads, then waits for the mutation. Task ids are UUIDs the
 * api generated; anything else is refused, so only checked UUIDs reach the SQL text (a
 * mutation runs in the background, after the request and its external data are gone).
 */
async function deleteUploads(client: ClickHouseClient, table: string, taskIds: readonly string[]): Promise<void> {
  quoteIdentifier(table); // refuses anything but a plain table name
  for (const id of taskIds) if (!isUuid(id)) throw new Error(`not a task id: ${JSON.stringify(id)}`);
  const where = `task_id IN (${taskIds.map((id) => `'${id}'`).join(', ')})`;
  await client.command({ query: `ALTER TABLE ${table} DELETE WHERE ${where}` });
  await untilMutationsDone(client, table, DELETE_UPLOADS_TIMEOUT_MS);
}

/** A rebuild's deletion of the uploads a cut leaves unsealed: minutes at most on the tables a rebuild writes. */
const DELETE_UPLOADS_TIMEOUT_MS = 3_600_000;
