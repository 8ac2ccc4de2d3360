import type { Capabilities } from '@meridian/clickhouse';
import { catalogTable, frozenStandIn, LIVE_CATALOG, LIVE_CATALOG_DATA, LIVE_POINTS, pointsTable, q } from './generations.ts';

/**
 * The statements of a swap, per kind of database: the one place where the swap decides by the
 * server's capabilities. Both keep the live catalog view where inserts into `points` find it.
 *
 * Ordinary (ClickHouse 18.16): views bind to table names, and a multi-table RENAME is one step.
 * The live table is frozen by renaming it to points_g<M> and a stand-in to `points`; the swap
 * renames N's table to `points` and N's catalog table to `.inner.metric_catalog`, the name the
 * catalog view writes into.
 *
 * Atomic (current ClickHouse): the catalog is the table `metric_catalog` fed by the view
 * `metric_catalog_feed` (TO metric_catalog, FROM points; the migrations create this form there).
 * RENAME moves a view's source binding with the renamed table, while `EXCHANGE TABLES` leaves it
 * with the name (measured on 26.9: `system.tables.dependencies_table` of `points` keeps the view
 * across an exchange, and a renamed-away `points` takes it along). So every move of `points` is an
 * exchange: the freeze exchanges the live table with a stand-in (a Merge table over the name the
 * live table then has, points_frozen_g<N>), and the swap is one
 * `EXCHANGE TABLES points AND points_g<N>, metric_catalog AND metric_catalog_g<N>`: inserts into
 * `points` feed the live catalog view at every moment, which from then on writes N's rows into
 * N's catalog. The names left over are tidied afterwards (not seen by readers of `points`).
 */
export type SwapSql = {
  /** The table holding the live catalog's data, which the swap moves out. */
  readonly liveCatalogData: string;
  /** Where the live generation's rows are while the live table is frozen. */
  frozenData(m: number, n: number): string;
  /** Creates the stand-in (before the freeze). */
  prepareFreeze(m: number, n: number, database: string): string;
  /** The one statement that freezes: `points` becomes the stand-in. */
  freeze(m: number, n: number): string;
  /** The one statement that swaps N in (standInPlace: the stand-in is `points`; else `points` is missing). */
  swapIn(m: number, n: number, standInPlace: boolean): string;
  /** Tidies the names left over by the swap (nothing reads them). */
  afterSwap(m: number, n: number): readonly string[];
  /** With the stand-in as `points`: the statement that puts the frozen live table back, and where the stand-in is then. */
  unfreeze(m: number, n: number, aside: string): { readonly statement: string; readonly standIn: string };
};

const ordinary: SwapSql = {
  liveCatalogData: LIVE_CATALOG_DATA,
  frozenData: (m) => pointsTable(m),
  prepareFreeze: (m, n, database) => `CREATE TABLE ${q(frozenStandIn(n))} AS ${q(LIVE_POINTS)} ENGINE = Merge('${database}', '^${pointsTable(m)}$')`,
  freeze: (m, n) => `RENAME TABLE ${q(LIVE_POINTS)} TO ${q(pointsTable(m))}, ${q(frozenStandIn(n))} TO ${q(LIVE_POINTS)}`,
  swapIn: (m, n, standInPlace) => `RENAME TABLE ${[
    ...(standInPlace ? [`${q(LIVE_POINTS)} TO ${q(frozenStandIn(n))}`] : []),
    `${q(pointsTable(n))} TO ${q(LIVE_POINTS)}`,
    `${q(LIVE_CATALOG_DATA)} TO ${q(catalogTable(m))}`,
    `${q(catalogTable(n))} TO ${q(LIVE_CATALOG_DATA)}`,
  ].join(', ')}`,
  afterSwap: (_m, n) => [`DROP TABLE IF EXISTS ${q(frozenStandIn(n))}`],
  unfreeze: (m, _n, aside) => ({ statement: `RENAME TABLE ${q(LIVE_POINTS)} TO ${q(aside)}, ${q(pointsTable(m))} TO ${q(LIVE_POINTS)}`, standIn: aside }),
};

const atomic: SwapSql = {
  liveCatalogData: LIVE_CATALOG,
  frozenData: (_m, n) => frozenStandIn(n),
  // A Merge table leaves itself out of its own regex: it reads the live rows once the names are exchanged.
  prepareFreeze: (_m, n, database) => `CREATE TABLE ${q(frozenStandIn(n))} AS ${q(LIVE_POINTS)} ENGINE = Merge('${database}', '^${frozenStandIn(n)}$')`,
  freeze: (_m, n) => `EXCHANGE TABLES ${q(LIVE_POINTS)} AND ${q(frozenStandIn(n))}`,
  swapIn: (_m, n, standInPlace) => {
    if (!standInPlace) throw new Error(`on an Atomic database the swap exchanges ${LIVE_POINTS} with generation ${n}: there must be a ${LIVE_POINTS} to exchange with`);
    return `EXCHANGE TABLES ${q(LIVE_POINTS)} AND ${q(pointsTable(n))}, ${q(LIVE_CATALOG)} AND ${q(catalogTable(n))}`;
  },
  // points_g<N> is now the stand-in, metric_catalog_g<N> the retired catalog, points_frozen_g<N> the retired rows.
  afterSwap: (m, n) => [
    `DROP TABLE ${q(pointsTable(n))}`,
    `RENAME TABLE ${q(frozenStandIn(n))} TO ${q(pointsTable(m))}, ${q(catalogTable(n))} TO ${q(catalogTable(m))}`,
  ],
  unfreeze: (_m, n) => ({ statement: `EXCHANGE TABLES ${q(LIVE_POINTS)} AND ${q(frozenStandIn(n))}`, standIn: frozenStandIn(n) }),
};

export function swapSql(caps: Pick<Capabilities, 'atomicDatabase' | 'exchangeTables' | 'databaseEngine'>): SwapSql {
  if (caps.atomicDatabase && caps.exchangeTables) return atomic;
  if (caps.databaseEngine === 'Ordinary') return ordinary;
  throw new Error(`the swap knows Ordinary databases (views bound to names, ClickHouse 18.16) and Atomic ones with EXCHANGE TABLES; this one is ${caps.databaseEngine}`);
}
