import { describe, expect, it } from 'vitest';
import { selectorMetricNames } from './names.ts';
import { parsePromql } from './parse.ts';

describe('the metric names a query can read', () => {
  it('are the names every selector gives exactly, in functions, aggregations, parameters and both sides of an operator', () => {
    expect(selectorMetricNames(parsePromql('sum by (job) (rate(a_total{job="x"}[5m])) / on(job) b'))).toEqual(['a_total', 'b']);
    expect(selectorMetricNames(parsePromql('topk(scalar(k), {__name__="c"}) + -d offset 5m'))).toEqual(['k', 'c', 'd']);
    expect(selectorMetricNames(parsePromql('a + a'))).toEqual(['a']);
  });

  it('are none at all for a query without selectors', () => {
    expect(selectorMetricNames(parsePromql('time() * 2'))).toEqual([]);
  });

  it('are unknown (the whole catalog) once one selector matches its name otherwise', () => {
    expect(selectorMetricNames(parsePromql('a + {__name__=~"b.*"}'))).toBeNull();
    expect(selectorMetricNames(parsePromql('a + {__name__!="b", job="x"}'))).toBeNull();
    expect(selectorMetricNames(parsePromql('sum(rate({job="x"}[5m]))'))).toBeNull();
  });
});
