import { describe, expect, it } from 'vitest';
import { parseSeries, seriesSql } from './series.ts';

describe('the sampled series query', () => {
  it('groups by epoch-aligned buckets of the step, names only through the external table', () => {
    const sql = seriesSql(1000, 2000, 60_000);
    expect(sql).toContain('intDiv(ts, 60000) * 60000 AS t');
    expect(sql).toContain('metric_name IN (SELECT name FROM names)');
    expect(sql).toContain('ts >= 1000 AND ts <= 2000');
    expect(sql).toMatch(/GROUP BY metric_name, t ORDER BY metric_name, t/);
    expect(sql).not.toMatch(/'/); // no string literal at all
  });

  it('takes only safe integers and a positive step', () => {
    expect(() => seriesSql(0, 1.5, 10)).toThrow(TypeError);
    expect(() => seriesSql(0, 10, 0)).toThrow(RangeError);
    expect(() => seriesSql(0, 10, Number.NaN)).toThrow();
  });

  it('reads the answer as columns per metric, in the order asked, empty series kept', () => {
    const text = 'a\\tb\t0\t1\t3\t2\t3\na\\tb\t60000\t-inf\tinf\tnan\t1\nc\t0\t5\t5\t5\t1\n';
    expect(parseSeries(text, ['c', 'a\tb', 'd'])).toEqual([
      { metric_name: 'c', t: [0], min: [5], max: [5], avg: [5], count: [1] },
      { metric_name: 'a\tb', t: [0, 60_000], min: [1, -Infinity], max: [3, Infinity], avg: [2, Number.NaN], count: [3, 1] },
      { metric_name: 'd', t: [], min: [], max: [], avg: [], count: [] },
    ]);
    expect(() => parseSeries('x\t0\t1\t1\t1\t1\n', ['a'])).toThrow(/not asked for/);
  });
});
