import { describe, expect, it } from 'vitest';
import { capabilities } from '@meridian/clickhouse';
import { swapSql } from './swap-sql.ts';

describe('the swap statements, chosen by the server', () => {
  it('18.16 (Ordinary): RENAME, the catalog by the name of the view\'s inner table (unchanged)', () => {
    const sql = swapSql(capabilities('18.16.1.1', 'Ordinary'));
    expect(sql.liveCatalogData).toBe('.inner.metric_catalog');
    expect(sql.freeze(1, 2)).toBe('RENAME TABLE `points` TO `points_g1`, `points_frozen_g2` TO `points`');
    expect(sql.swapIn(1, 2, true)).toBe('RENAME TABLE `points` TO `points_frozen_g2`, `points_g2` TO `points`, `.inner.metric_catalog` TO `metric_catalog_g1`, `metric_catalog_g2` TO `.inner.metric_catalog`');
    expect(sql.swapIn(1, 2, false)).toBe('RENAME TABLE `points_g2` TO `points`, `.inner.metric_catalog` TO `metric_catalog_g1`, `metric_catalog_g2` TO `.inner.metric_catalog`');
  });

  it('an Atomic database: every move of points is an EXCHANGE, so the live view stays with the name', () => {
    const sql = swapSql(capabilities('26.9.2.1', 'Atomic'));
    expect(sql.liveCatalogData).toBe('metric_catalog');
    expect(sql.prepareFreeze(1, 2, 'db')).toBe("CREATE TABLE `points_frozen_g2` AS `points` ENGINE = Merge('db', '^points_frozen_g2$')");
    expect(sql.freeze(1, 2)).toBe('EXCHANGE TABLES `points` AND `points_frozen_g2`');
    expect(sql.frozenData(1, 2)).toBe('points_frozen_g2');
    expect(sql.swapIn(1, 2, true)).toBe('EXCHANGE TABLES `points` AND `points_g2`, `metric_catalog` AND `metric_catalog_g2`');
    expect(sql.afterSwap(1, 2)).toEqual(['DROP TABLE `points_g2`', 'RENAME TABLE `points_frozen_g2` TO `points_g1`, `metric_catalog_g2` TO `metric_catalog_g1`']);
    expect(() => sql.swapIn(1, 2, false)).toThrow(/must be a points/);
  });

  it('any other database engine is refused', () => {
    expect(() => swapSql(capabilities('24.3.1.1', 'Replicated'))).toThrow(/Replicated/);
  });
});
