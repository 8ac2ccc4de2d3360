import type { Capabilities } from '@meridian/clickhouse';
import { catalogTable, LIVE_POINTS, pointsTable, ROLLUP_VIEWS, rollupTable } from './generations.ts';
import type { SwapSql } from './swap-sql.ts';

type Tables = ReadonlyMap<string, string>;

/** Refuses to swap in generation N when it is not built whole, or when generation M's retired names are taken. */
export function refuseUnswappableGeneration(
  tables: Tables,
  caps: Pick<Capabilities, 'atomicDatabase'>,
  sql: Pick<SwapSql, 'liveCatalogData'>,
  m: number,
  n: number,
): void {
  const newTable = pointsTable(n);
  if (tables.get(newTable) !== 'MergeTree') throw new Error(`no table ${newTable}: build generation ${n} first`);
  if (!tables.has(catalogTable(n))) throw new Error(`no table ${catalogTable(n)}: generation ${n} has no catalog`);
  const catalogEngine = tables.get(sql.liveCatalogData);
  if (catalogEngine === undefined || catalogEngine === 'MaterializedView') {
    // An Atomic database migrated before the catalog took the explicit-table form there: its data hides in `.inner_id.<uuid>`.
    throw new Error(
      `${sql.liveCatalogData} is ${catalogEngine === undefined ? 'missing' : 'a view with an inner table'}: the swap needs the live catalog's data as a table${caps.atomicDatabase ? ' (on an Atomic database, metric_catalog fed by the view metric_catalog_feed: see docs/operating/clickhouse-versions.md to convert)' : ''}`,
    );
  }
  if (tables.has(catalogTable(m))) throw new Error(`${catalogTable(m)} exists already: drop generation ${m} first`);
  for (const view of ROLLUP_VIEWS) if (tables.has(rollupTable(view, m))) throw new Error(`${rollupTable(view, m)} exists already: drop generation ${m} first`);
}

/**
 * Refuses a live `points` the swap cannot take the place of; returns whether it is frozen
 * already (a stand-in left by a swap that stopped midway).
 */
export function refuseUnswappableLive(
  tables: Tables,
  caps: Pick<Capabilities, 'atomicDatabase'>,
  sql: Pick<SwapSql, 'frozenData'>,
  m: number,
  n: number,
): boolean {
  const live = tables.get(LIVE_POINTS);
  if (live !== undefined && live !== 'MergeTree' && live !== 'Merge') throw new Error(`${LIVE_POINTS} is a ${live}, not a table this swap knows`);
  const alreadyFrozen = live === 'Merge';
  if (live === 'MergeTree' && tables.has(pointsTable(m))) throw new Error(`${pointsTable(m)} exists already: drop generation ${m} first`);
  if (alreadyFrozen && !tables.has(sql.frozenData(m, n))) throw new Error(`${LIVE_POINTS} is a stand-in but ${sql.frozenData(m, n)} is missing`);
  if (caps.atomicDatabase && live !== 'MergeTree' && !alreadyFrozen) {
    // Renaming N in where `points` is missing would leave the live catalog view behind (RENAME takes it along on Atomic).
    throw new Error(`on an Atomic database the swap needs a live ${LIVE_POINTS} table to exchange with; there is none (not implemented yet)`);
  }
  return alreadyFrozen;
}
