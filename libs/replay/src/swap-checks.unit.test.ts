import { describe, expect, it } from 'vitest';
import { capabilities } from '@meridian/clickhouse';
import { refuseUnswappableGeneration, refuseUnswappableLive } from './swap-checks.ts';
import { swapSql } from './swap-sql.ts';

const ordinary = capabilities('18.16.1.1', 'Ordinary');
const sql = swapSql(ordinary);
/** Generation 2 built whole, generation 1 live, on 18.16. */
const built = (): Map<string, string> =>
  new Map([
    ['points', 'MergeTree'],
    ['points_g2', 'MergeTree'],
    ['metric_catalog_g2', 'AggregatingMergeTree'],
    ['.inner.metric_catalog', 'AggregatingMergeTree'],
  ]);

describe('what a swap refuses before it touches a table', () => {
  it('a generation built whole over a live table passes, not frozen', () => {
    expect(() => refuseUnswappableGeneration(built(), ordinary, sql, 1, 2)).not.toThrow();
    expect(refuseUnswappableLive(built(), ordinary, sql, 1, 2)).toBe(false);
  });

  it('a generation not built, without its catalog, or with retired names taken, is refused', () => {
    const without = (name: string) => new Map([...built()].filter(([t]) => t !== name));
    expect(() => refuseUnswappableGeneration(without('points_g2'), ordinary, sql, 1, 2)).toThrow('no table points_g2: build generation 2 first');
    expect(() => refuseUnswappableGeneration(without('metric_catalog_g2'), ordinary, sql, 1, 2)).toThrow('generation 2 has no catalog');
    expect(() => refuseUnswappableGeneration(without('.inner.metric_catalog'), ordinary, sql, 1, 2)).toThrow('.inner.metric_catalog is missing');
    expect(() => refuseUnswappableGeneration(built().set('metric_catalog_g1', 'AggregatingMergeTree'), ordinary, sql, 1, 2)).toThrow(
      'metric_catalog_g1 exists already',
    );
    expect(() => refuseUnswappableGeneration(built().set('points_1m_g1', 'AggregatingMergeTree'), ordinary, sql, 1, 2)).toThrow('points_1m_g1 exists already');
  });

  it('a live table of another kind, a taken retired name or a stand-in without its frozen rows is refused; a stand-in with them is frozen already', () => {
    expect(() => refuseUnswappableLive(built().set('points', 'Log'), ordinary, sql, 1, 2)).toThrow('points is a Log');
    expect(() => refuseUnswappableLive(built().set('points_g1', 'MergeTree'), ordinary, sql, 1, 2)).toThrow('points_g1 exists already');
    expect(() => refuseUnswappableLive(built().set('points', 'Merge'), ordinary, sql, 1, 2)).toThrow('points is a stand-in but points_g1 is missing');
    expect(refuseUnswappableLive(built().set('points', 'Merge').set('points_g1', 'MergeTree'), ordinary, sql, 1, 2)).toBe(true);
  });
});
