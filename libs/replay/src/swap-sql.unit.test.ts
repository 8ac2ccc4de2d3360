import { describe, expect, it } from 'vitest';
import { capabilities } from '@meridian/clickhouse';
import { swapSql } from './swap-sql.ts';

describe('the swap statements, chosen by the server', () => {
  it("18.16 (Ordinary): RENAME, the catalog and the rollups by the names of their views' inner tables (unchanged)", () => {
    const sql = swapSql(capabilities('18.16.1.1', 'Ordinary'));
    expect(sql.liveCatalogData).toBe('.inner.metric_catalog');
    // points_seals (staged uploads' seals) is frozen and moved with points, in the same statements.
    expect(sql.prepareFreeze(1, 2, 'db')).toEqual([
      "CREATE TABLE `points_frozen_g2` AS `points` ENGINE = Merge('db', '^points_g1$')",
      "CREATE TABLE `points_seals_frozen_g2` AS `points_seals` ENGINE = Merge('db', '^points_seals_g1$')",
    ]);
    expect(sql.freeze(1, 2)).toBe(
      'RENAME TABLE `points` TO `points_g1`, `points_frozen_g2` TO `points`, `points_seals` TO `points_seals_g1`, `points_seals_frozen_g2` TO `points_seals`',
    );
    expect(sql.frozenSeals(1, 2)).toBe('points_seals_g1');
    expect(sql.swapIn(1, 2, true, 'standIn')).toBe(
      'RENAME TABLE `points` TO `points_frozen_g2`, `points_g2` TO `points`, `points_seals` TO `points_seals_frozen_g2`, `points_seals_g2` TO `points_seals`, `.inner.metric_catalog` TO `metric_catalog_g1`, `metric_catalog_g2` TO `.inner.metric_catalog`, `.inner.points_1m` TO `points_1m_g1`, `points_1m_g2` TO `.inner.points_1m`, `.inner.points_1h` TO `points_1h_g1`, `points_1h_g2` TO `.inner.points_1h`',
    );
    // No live points table to freeze: the live seals go aside as generation 1's.
    expect(sql.swapIn(1, 2, false, 'live')).toBe(
      'RENAME TABLE `points_g2` TO `points`, `points_seals` TO `points_seals_g1`, `points_seals_g2` TO `points_seals`, `.inner.metric_catalog` TO `metric_catalog_g1`, `metric_catalog_g2` TO `.inner.metric_catalog`, `.inner.points_1m` TO `points_1m_g1`, `points_1m_g2` TO `.inner.points_1m`, `.inner.points_1h` TO `points_1h_g1`, `points_1h_g2` TO `.inner.points_1h`',
    );
    expect(sql.afterSwap(1, 2)).toEqual(['DROP TABLE IF EXISTS `points_frozen_g2`', 'DROP TABLE IF EXISTS `points_seals_frozen_g2`']);
    expect(sql.unfreeze(1, 2, { points: 'a', seals: 'b' }, true)).toEqual({
      statement: 'RENAME TABLE `points` TO `a`, `points_g1` TO `points`, `points_seals` TO `b`, `points_seals_g1` TO `points_seals`',
      standIns: ['a', 'b'],
    });
  });

  it('an Atomic database: every move of points is an EXCHANGE, so the live view stays with the name', () => {
    const sql = swapSql(capabilities('26.9.2.1', 'Atomic'));
    expect(sql.liveCatalogData).toBe('metric_catalog');
    expect(sql.prepareFreeze(1, 2, 'db')).toEqual([
      "CREATE TABLE `points_frozen_g2` AS `points` ENGINE = Merge('db', '^points_frozen_g2$')",
      "CREATE TABLE `points_seals_frozen_g2` AS `points_seals` ENGINE = Merge('db', '^points_seals_frozen_g2$')",
    ]);
    expect(sql.freeze(1, 2)).toBe('EXCHANGE TABLES `points` AND `points_frozen_g2`, `points_seals` AND `points_seals_frozen_g2`');
    expect(sql.frozenData(1, 2)).toBe('points_frozen_g2');
    expect(sql.frozenSeals(1, 2)).toBe('points_seals_frozen_g2');
    expect(sql.swapIn(1, 2, true, 'standIn')).toBe(
      'EXCHANGE TABLES `points` AND `points_g2`, `metric_catalog` AND `metric_catalog_g2`, `points_1m` AND `points_1m_g2`, `points_1h` AND `points_1h_g2`, `points_seals` AND `points_seals_g2`',
    );
    expect(sql.afterSwap(1, 2)).toEqual([
      'DROP TABLE `points_g2`',
      'DROP TABLE `points_seals_g2`',
      'RENAME TABLE `points_frozen_g2` TO `points_g1`, `metric_catalog_g2` TO `metric_catalog_g1`, `points_1m_g2` TO `points_1m_g1`, `points_1h_g2` TO `points_1h_g1`, `points_seals_frozen_g2` TO `points_seals_g1`',
    ]);
    expect(sql.unfreeze(1, 2, { points: 'a', seals: 'b' }, true).statement).toBe(
      'EXCHANGE TABLES `points` AND `points_frozen_g2`, `points_seals` AND `points_seals_frozen_g2`',
    );
    expect(() => sql.swapIn(1, 2, false, 'live')).toThrow(/frozen ones to exchange/);
  });

  it('any other database engine is refused', () => {
    expect(() => swapSql(capabilities('24.3.1.1', 'Replicated'))).toThrow(/Replicated/);
  });
});
