import type { Capabilities } from '@meridian/clickhouse';
import {
  catalogTable,
  frozenSealsStandIn,
  frozenStandIn,
  LIVE_CATALOG,
  LIVE_CATALOG_DATA,
  LIVE_POINTS,
  LIVE_SEALS,
  liveRollupData,
  pointsTable,
  q,
  ROLLUP_VIEWS,
  rollupTable,
  sealsTable,
} from './generations.ts';

/**
 * The statements of a swap, per kind of database: the one place where the swap decides by the
 * server's capabilities. Both keep the live catalog view where inserts into `points` find it.
 *
 * Ordinary (ClickHouse 18.16): views bind to table names, and a multi-table RENAME is one step.
 * The live table is frozen by renaming it to points_g<M> and a stand-in to `points`; the swap
 * renames N's table to `points` and N's catalog table to `.inner.metric_catalog`, the name the
 * catalog view writes into. `points_seals` (staged uploads' seals, which count in the position)
 * is frozen and swapped with `points` in the same statements, so its stand-in keeps it readable
 * and a staged share's seal cannot be recorded while `points` is held.
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
 *
 * The rollups (migration 010) are views on `points` too, and move exactly as the catalog does, in
 * the same statement: their data tables `.inner.<view>` (Ordinary) or `<view>` (Atomic) with N's
 * `<view>_g<N>`.
 */
/**
 * Where `points_seals` (staged uploads' seals: they count in the position, so they move
 * with `points`) is when N comes in: the read-only stand-in of a freeze, the live table itself
 * (nothing was frozen: the live points table is gone), or nowhere.
 */
export type SealsPlace = 'standIn' | 'live' | 'none';

export type SwapSql = {
  /** The table holding the live catalog's data, which the swap moves out. */
  readonly liveCatalogData: string;
  /** Where the live generation's rows are while the live table is frozen. */
  frozenData(m: number, n: number): string;
  /** Where the live generation's seals are while the live table is frozen. */
  frozenSeals(m: number, n: number): string;
  /** Creates the stand-ins of points and points_seals (before the freeze). */
  prepareFreeze(m: number, n: number, database: string): readonly string[];
  /** The one statement that freezes: `points` and `points_seals` become the stand-ins. */
  freeze(m: number, n: number): string;
  /** The one statement that swaps N in (standInPlace: the stand-in is `points`; else `points` is missing). */
  swapIn(m: number, n: number, standInPlace: boolean, seals: SealsPlace): string;
  /** Tidies the names left over by the swap (nothing reads them). */
  afterSwap(m: number, n: number): readonly string[];
  /**
   * With the stand-in as `points`: the statement that puts the frozen live tables back (the seals
   * too when sealsFrozen), and where the stand-ins are then.
   */
  unfreeze(
    m: number,
    n: number,
    aside: { readonly points: string; readonly seals: string },
    sealsFrozen: boolean,
  ): { readonly statement: string; readonly standIns: readonly string[] };
};

const standIn = (name: string, like: string, database: string, over: string) =>
  `CREATE TABLE ${q(name)} AS ${q(like)} ENGINE = Merge('${database}', '^${over}$')`;

const ordinary: SwapSql = {
  liveCatalogData: LIVE_CATALOG_DATA,
  frozenData: (m) => pointsTable(m),
  frozenSeals: (m) => sealsTable(m),
  prepareFreeze: (m, n, database) => [
    standIn(frozenStandIn(n), LIVE_POINTS, database, pointsTable(m)),
    standIn(frozenSealsStandIn(n), LIVE_SEALS, database, sealsTable(m)),
  ],
  freeze: (m, n) =>
    `RENAME TABLE ${q(LIVE_POINTS)} TO ${q(pointsTable(m))}, ${q(frozenStandIn(n))} TO ${q(LIVE_POINTS)}, ${q(LIVE_SEALS)} TO ${q(sealsTable(m))}, ${q(frozenSealsStandIn(n))} TO ${q(LIVE_SEALS)}`,
  swapIn: (m, n, standInPlace, seals) =>
    `RENAME TABLE ${[
      ...(standInPlace ? [`${q(LIVE_POINTS)} TO ${q(frozenStandIn(n))}`] : []),
      `${q(pointsTable(n))} TO ${q(LIVE_POINTS)}`,
      ...(seals === 'standIn' ? [`${q(LIVE_SEALS)} TO ${q(frozenSealsStandIn(n))}`] : seals === 'live' ? [`${q(LIVE_SEALS)} TO ${q(sealsTable(m))}`] : []),
      `${q(sealsTable(n))} TO ${q(LIVE_SEALS)}`,
      `${q(LIVE_CATALOG_DATA)} TO ${q(catalogTable(m))}`,
      `${q(catalogTable(n))} TO ${q(LIVE_CATALOG_DATA)}`,
      ...ROLLUP_VIEWS.flatMap((view) => [
        `${q(liveRollupData(view))} TO ${q(rollupTable(view, m))}`,
        `${q(rollupTable(view, n))} TO ${q(liveRollupData(view))}`,
      ]),
    ].join(', ')}`,
  afterSwap: (_m, n) => [`DROP TABLE IF EXISTS ${q(frozenStandIn(n))}`, `DROP TABLE IF EXISTS ${q(frozenSealsStandIn(n))}`],
  unfreeze: (m, _n, aside, sealsFrozen) => ({
    statement: `RENAME TABLE ${q(LIVE_POINTS)} TO ${q(aside.points)}, ${q(pointsTable(m))} TO ${q(LIVE_POINTS)}${sealsFrozen ? `, ${q(LIVE_SEALS)} TO ${q(aside.seals)}, ${q(sealsTable(m))} TO ${q(LIVE_SEALS)}` : ''}`,
    standIns: sealsFrozen ? [aside.points, aside.seals] : [aside.points],
  }),
};

const atomic: SwapSql = {
  liveCatalogData: LIVE_CATALOG,
  frozenData: (_m, n) => frozenStandIn(n),
  frozenSeals: (_m, n) => frozenSealsStandIn(n),
  // A Merge table leaves itself out of its own regex: it reads the live rows once the names are exchanged.
  prepareFreeze: (_m, n, database) => [
    standIn(frozenStandIn(n), LIVE_POINTS, database, frozenStandIn(n)),
    standIn(frozenSealsStandIn(n), LIVE_SEALS, database, frozenSealsStandIn(n)),
  ],
  freeze: (_m, n) => `EXCHANGE TABLES ${q(LIVE_POINTS)} AND ${q(frozenStandIn(n))}, ${q(LIVE_SEALS)} AND ${q(frozenSealsStandIn(n))}`,
  swapIn: (_m, n, standInPlace, seals) => {
    if (!standInPlace || seals !== 'standIn')
      throw new Error(
        `on an Atomic database the swap exchanges ${LIVE_POINTS} and ${LIVE_SEALS} with generation ${n}'s: there must be frozen ones to exchange with`,
      );
    const rollups = ROLLUP_VIEWS.map((view) => `, ${q(view)} AND ${q(rollupTable(view, n))}`).join('');
    return `EXCHANGE TABLES ${q(LIVE_POINTS)} AND ${q(pointsTable(n))}, ${q(LIVE_CATALOG)} AND ${q(catalogTable(n))}${rollups}, ${q(LIVE_SEALS)} AND ${q(sealsTable(n))}`;
  },
  // points_g<N> and points_seals_g<N> are now the stand-ins, metric_catalog_g<N> the retired
  // catalog (and <view>_g<N> the retired rollups), points_frozen_g<N> and points_seals_frozen_g<N>
  // the retired rows and seals.
  afterSwap: (m, n) => [
    `DROP TABLE ${q(pointsTable(n))}`,
    `DROP TABLE ${q(sealsTable(n))}`,
    `RENAME TABLE ${q(frozenStandIn(n))} TO ${q(pointsTable(m))}, ${q(catalogTable(n))} TO ${q(catalogTable(m))}, ${ROLLUP_VIEWS.map((view) => `${q(rollupTable(view, n))} TO ${q(rollupTable(view, m))}, `).join('')}${q(frozenSealsStandIn(n))} TO ${q(sealsTable(m))}`,
  ],
  unfreeze: (_m, n, _aside, sealsFrozen) => ({
    statement: `EXCHANGE TABLES ${q(LIVE_POINTS)} AND ${q(frozenStandIn(n))}${sealsFrozen ? `, ${q(LIVE_SEALS)} AND ${q(frozenSealsStandIn(n))}` : ''}`,
    standIns: sealsFrozen ? [frozenStandIn(n), frozenSealsStandIn(n)] : [frozenStandIn(n)],
  }),
};

export function swapSql(caps: Pick<Capabilities, 'atomicDatabase' | 'exchangeTables' | 'databaseEngine'>): SwapSql {
  if (caps.atomicDatabase && caps.exchangeTables) return atomic;
  if (caps.databaseEngine === 'Ordinary') return ordinary;
  throw new Error(
    `the swap knows Ordinary databases (views bound to names, ClickHouse 18.16) and Atomic ones with EXCHANGE TABLES; this one is ${caps.databaseEngine}`,
  );
}
