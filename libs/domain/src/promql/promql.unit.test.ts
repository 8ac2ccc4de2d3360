import { describe, expect, it } from 'vitest';
import { seriesLabels as parseSeriesName } from '../series/canonical.ts';
import { evalInstant, evalRange, type Fetched, type QueryResult, type SeriesData } from './eval.ts';
import { formatValue, queryData, queryDataJsonChunks } from './format.ts';
import { parseInstantParams, parseRangeParams, parseTimeMs } from './params.ts';
import { parsePromql } from './parse.ts';
import { planWindows, type CatalogSeries } from './plan.ts';

/** queryDataJsonChunks joined into one text, decoded across chunk ends. */
function queryDataJson(r: QueryResult, chunkBytes?: number): string {
  const decoder = new TextDecoder();
  return [...queryDataJsonChunks(r, chunkBytes)].map((c) => decoder.decode(c, { stream: true })).join('') + decoder.decode();
}

const LOOKBACK = 300_000;

/** A small store: every series sampled every 15 s from 0 for 20 minutes, value = f(i). */
function store(names: Record<string, (i: number) => number>): { catalog: CatalogSeries[]; data: Map<string, SeriesData> } {
  const catalog: CatalogSeries[] = [];
  const data = new Map<string, SeriesData>();
  for (const [name, f] of Object.entries(names)) {
    const labels = parseSeriesName(name);
    catalog.push({ name, labels });
    const ts = Array.from({ length: 81 }, (_, i) => i * 15_000);
    data.set(name, { labels, ts, vs: ts.map((_, i) => f(i)) });
  }
  return { catalog, data };
}

const S = store({
  'http_requests_total{code="200",job="api"}': (i) => i * 10,
  'http_requests_total{code="500",job="api"}': (i) => (i < 40 ? i : i - 40),
  'http_requests_total{code="200",job="web"}': (i) => i * 3,
  'temp{room="a"}': (i) => 20 + (i % 4),
  'lat_bucket{le="0.1"}': (i) => i,
  'lat_bucket{le="1"}': (i) => 3 * i,
  'lat_bucket{le="+Inf"}': (i) => 4 * i,
});

function run(query: string, t: number) {
  const e = parsePromql(query);
  const fetched: Fetched = new Map(planWindows(e, S.catalog, t, t, 1, LOOKBACK).map((w) => [w.selectorId, w.names.map((n) => S.data.get(n)!)]));
  return queryData(evalInstant(e, fetched, t, { lookbackMs: LOOKBACK }));
}

describe('PromQL parsing', () => {
  it.each([
    ['holt_winters(x[5m], 0.1, 0.1)', /function holt_winters/],
    ['x[5m:1m]', /subqueries/],
    ['count_values("v", x)', /aggregation count_values/],
    ['x @ 5', /@ modifier/],
  ])('refuses %s by name, as execution', (q, message) => {
    expect(() => parsePromql(q)).toThrow(message);
    try {
      parsePromql(q);
    } catch (e) {
      expect((e as { type: string }).type).toBe('execution');
    }
  });

  it.each([
    ['rate(x)', /expected type range vector/],
    ['sum(x[5m])', /instant vector in aggregation/],
    ['1 > 2', /BOOL modifier/],
    ['x{a="b"', /parse error/],
    ['{a=""}', /non-empty matcher/],
    ['x + on(a) 1', /vector matching only allowed/],
  ])('refuses %s as bad_data', (q, message) => {
    try {
      parsePromql(q);
      expect.unreachable();
    } catch (e) {
      expect((e as { type: string; message: string }).type).toBe('bad_data');
      expect((e as Error).message).toMatch(message);
    }
  });
});

describe('regular expressions', () => {
  it('are RE2, anchored, and linear in time: a pattern that would backtrack for ever in JavaScript answers at once', async () => {
    const { matchSeries } = await import('./plan.ts');
    const catalog = [
      { name: 'x', labels: parseSeriesName(`x{a="${'a'.repeat(5000)}b"}`) },
      { name: 'y', labels: parseSeriesName('y{a="500"}') },
    ];
    const started = performance.now();
    expect(matchSeries([{ name: 'a', op: '=~', value: '(a+)+$' }], catalog)).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(matchSeries([{ name: 'a', op: '=~', value: '5..' }], catalog).map((s) => s.name)).toEqual(['y']);
    expect(matchSeries([{ name: 'a', op: '!~', value: '5' }], catalog)).toHaveLength(2);
    expect(() => parsePromql('x{a=~"a(?=b)"}')).toThrow(/invalid regular expression/);
  });
});

describe('label_replace templates', () => {
  it("expand as Go's Regexp.Expand", async () => {
    const { expandTemplate } = await import('./eval.ts');
    const groups = ['whole', 'ab', 'cd'];
    const group = (g: number | string) => (typeof g === 'number' ? groups[g]! : g === 'host' ? 'ab' : '');
    const names = { host: 1 };
    expect(expandTemplate('$1-${2}', group, 2, names)).toBe('ab-cd');
    expect(expandTemplate('$1x', group, 2, names)).toBe(''); // the group named "1x"
    expect(expandTemplate('${1}x $host $$ $ $3 $01', group, 2, names)).toBe('abx ab $ $  ');
  });
});

describe('offset', () => {
  it('binds to the selector before it, as in Prometheus, though the grammar puts it after the whole expression', () => {
    const e = parsePromql('a - b offset 5m') as { lhs: { offsetMs: number }; rhs: { offsetMs: number } };
    expect([e.lhs.offsetMs, e.rhs.offsetMs]).toEqual([0, 300_000]);
    const n = parsePromql('-a offset 1m') as { expr: { offsetMs: number } };
    expect(n.expr.offsetMs).toBe(60_000);
    expect(() => parsePromql('sum(a) offset 1m')).toThrow(/offset modifier must be preceded/);
  });
});

describe('PromQL evaluation', () => {
  it('selects by labels with the lookback', () => {
    const r = run('http_requests_total{job="api",code=~"2.."}', 600_000) as { result: { metric: object; value: unknown[] }[] };
    expect(r.result).toEqual([{ metric: { __name__: 'http_requests_total', code: '200', job: 'api' }, value: [600, '400'] }]);
    // 20 min + 5 min: the last sample at 20 min is still in the lookback; one ms later it is not.
    expect((run('temp', 1_500_000) as { result: unknown[] }).result).toHaveLength(1);
    expect((run('temp', 1_500_001) as { result: unknown[] }).result).toHaveLength(0);
  });

  it('rates a counter as Prometheus extrapolates it', () => {
    // 10 per 15 s sampled over the whole window: 2/3 per second.
    const r = run('rate(http_requests_total{job="api",code="200"}[5m])', 600_000) as { result: { value: [number, string] }[] };
    expect(Number(r.result[0]!.value[1])).toBeCloseTo(10 / 15, 12);
    // The reset at sample 40 (10:00) is counted: 24→39 then 0→4, 19 in all.
    const inc = run('increase(http_requests_total{code="500"}[5m])', 660_000) as { result: { value: [number, string] }[] };
    expect(Number(inc.result[0]!.value[1])).toBeCloseTo(19, 9);
  });

  it('aggregates, matches vectors and answers histogram quantiles', () => {
    expect(run('sum by (job) (http_requests_total)', 150_000)).toEqual({
      resultType: 'vector',
      result: [
        { metric: { job: 'api' }, value: [150, '110'] },
        { metric: { job: 'web' }, value: [150, '30'] },
      ],
    });
    const ratio = run('http_requests_total{code="500"} / ignoring(code) http_requests_total{code="200",job="api"}', 150_000) as {
      result: { metric: object; value: unknown[] }[];
    };
    expect(ratio.result).toEqual([{ metric: { job: 'api' }, value: [150, '0.1'] }]);
    const q = run('histogram_quantile(0.5, lat_bucket)', 150_000) as { result: { value: [number, string] }[] };
    // 40 observations, rank 20: in (0.1, 1], 10 of 20 in it → 0.1 + 0.9 × 10/20.
    expect(Number(q.result[0]!.value[1])).toBeCloseTo(0.55, 12);
    expect(run('time() + 1', 150_000)).toEqual({ resultType: 'scalar', result: [150, '151'] });
  });

  it('evaluates a range query at start, start + step, … end', () => {
    const e = parsePromql('temp');
    const fetched: Fetched = new Map([[0, [S.data.get('temp{room="a"}')!]]]);
    const r = evalRange(e, fetched, 0, 60_000, 30_000, { lookbackMs: LOOKBACK });
    expect(queryData(r)).toEqual({
      resultType: 'matrix',
      result: [
        {
          metric: { __name__: 'temp', room: 'a' },
          values: [
            [0, '20'],
            [30, '22'],
            [60, '20'],
          ],
        },
      ],
    });
    expect(queryDataJson(r)).toBe(JSON.stringify(queryData(r)));
    // Several series, fractional seconds, special floats and a label value JSON must escape.
    const several = {
      resultType: 'matrix' as const,
      series: [
        {
          labels: [['job', 'a"\\b']] as [string, string][],
          points: [
            [1500, Number.NaN],
            [3000, Number.POSITIVE_INFINITY],
          ] as [number, number][],
        },
        {
          labels: [] as [string, string][],
          points: [
            [0, 1e-7],
            [1, -0],
            [2, 1e21],
          ] as [number, number][],
        },
      ],
    };
    expect(queryDataJson(several)).toBe(JSON.stringify(queryData(several)));
    expect(JSON.parse(queryDataJson(several)).result[0].values).toEqual([
      [1.5, 'NaN'],
      [3, '+Inf'],
    ]);
    // A reduced series is written from its steps, in chunks of any size (a text never straddles two: a label in UTF-8 stays whole).
    const values = {
      labels: [['room', 'süd ✓']] as [string, string][],
      present: Uint8Array.from([1, 0, 1, 1]),
      values: Float64Array.from([0.25, 9, 1 / 3, -2e-9]),
    };
    const reduced = {
      resultType: 'matrix' as const,
      series: [
        ...several.series,
        {
          labels: values.labels,
          points: [
            [60_000, 0.25],
            [180_000, 1 / 3],
            [240_000, -2e-9],
          ] as [number, number][],
          steps: { startMs: 60_000, stepMs: 60_000, values },
        },
      ],
    };
    for (const chunkBytes of [1, 5, 64, 65_536]) expect(queryDataJson(reduced, chunkBytes), `chunks of ${chunkBytes}`).toBe(JSON.stringify(queryData(reduced)));
  });

  it('has the store reduce the windows of the functions it can, and read samples for the others', () => {
    const windows = planWindows(parsePromql('rate(temp[5m]) + deriv(temp[5m]) + temp'), S.catalog, 0, 3_600_000, 60_000, LOOKBACK, 0);
    expect(windows.map((w) => w.reduce)).toEqual([{ func: 'rate', firstRefMs: 0, stepMs: 60_000, steps: 61, rangeMs: 300_000, aggregate: null }, null, null]);
  });

  it("has the store aggregate a reduced function too, with each series' group", () => {
    const [w] = planWindows(parsePromql('sum by (job) (rate(http_requests_total[5m]))'), S.catalog, 0, 600_000, 60_000, LOOKBACK, 0);
    expect(w!.names).toEqual([
      'http_requests_total{code="200",job="api"}',
      'http_requests_total{code="500",job="api"}',
      'http_requests_total{code="200",job="web"}',
    ]);
    expect(w!.reduce!.aggregate).toEqual({ op: 'sum', groupOf: [0, 0, 1], labels: [[['job', 'api']], [['job', 'web']]] });
    // Not when the function's results would clash (Prometheus' error), nor for topk, nor past one function.
    const alike = [
      { name: 'a{x="1"}', labels: parseSeriesName('a{x="1"}') },
      { name: 'b{x="1"}', labels: parseSeriesName('b{x="1"}') },
    ];
    expect(planWindows(parsePromql('sum(rate({__name__=~"a|b"}[5m]))'), alike, 0, 600_000, 60_000, LOOKBACK, 0)[0]!.reduce!.aggregate).toBeNull();
    expect(planWindows(parsePromql('topk(1, rate(temp[5m]))'), S.catalog, 0, 600_000, 60_000, LOOKBACK, 0)[0]!.reduce!.aggregate).toBeNull();
    expect(planWindows(parsePromql('sum(abs(rate(temp[5m])))'), S.catalog, 0, 600_000, 60_000, LOOKBACK, 0)[0]!.reduce!.aggregate).toBeNull();
  });

  it('has the store reduce only when the samples are many times the rows it would answer', () => {
    // One series of 1,000 points over 1,000 s: a 1 s step answers as many rows as samples, a 100 s step a tenth.
    const catalog = [{ name: 'temp', labels: parseSeriesName('temp'), extent: { points: 1000, firstMs: 0, lastMs: 999_999 } }];
    const plan = (step: number) => planWindows(parsePromql('rate(temp[5m])'), catalog, 0, 1_000_000, step, LOOKBACK, 4)[0]!.reduce;
    expect(plan(1000)).toBeNull();
    expect(plan(100_000)).not.toBeNull();
  });

  it('plans sparse windows when steps are wider than the range', () => {
    const [w] = planWindows(parsePromql('rate(temp[1m] offset 1m)'), S.catalog, 3_600_000, 7_200_000, 600_000, LOOKBACK);
    expect(w).toEqual({
      selectorId: 0,
      names: ['temp{room="a"}'],
      fromMs: 3_480_000,
      toMs: 7_140_000,
      sparse: { firstRefMs: 3_540_000, stepMs: 600_000, widthMs: 60_000 },
      reduce: null,
      rollup: null,
    });
  });
});

describe('the API parameters and formats', () => {
  it('reads Unix seconds and RFC 3339', () => {
    expect(parseTimeMs('time', '1700000000.123')).toBe(1_700_000_000_123);
    expect(parseTimeMs('time', '2023-11-14T22:13:20.5Z')).toBe(1_700_000_000_500);
    expect(parseTimeMs('time', '2023-11-14T23:13:20+01:00')).toBe(1_700_000_000_000);
    expect(() => parseTimeMs('time', 'yesterday')).toThrow('invalid parameter "time": cannot parse "yesterday" to a valid timestamp');
    expect(parseInstantParams({ query: 'x' }, 42)).toEqual({ query: 'x', timeMs: 42 });
  });

  it('checks a range query as Prometheus does', () => {
    expect(parseRangeParams({ query: 'x', start: '0', end: '3600', step: '1m' }, 11_000)).toEqual({ query: 'x', startMs: 0, endMs: 3_600_000, stepMs: 60_000 });
    expect(parseRangeParams({ query: 'x', start: '0', end: '1', step: '0.25' }, 11_000).stepMs).toBe(250);
    expect(() => parseRangeParams({ start: '10', end: '0', step: '1' }, 11_000)).toThrow('end timestamp must not be before start time');
    expect(() => parseRangeParams({ start: '0', end: '1', step: '0' }, 11_000)).toThrow(/zero or negative/);
    expect(() => parseRangeParams({ start: '0', end: '20000', step: '1' }, 11_000)).toThrow(
      'exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)',
    );
  });

  it('writes values as Go does', () => {
    expect(formatValue(1e21)).toBe('1000000000000000000000');
    expect(formatValue(1.5e-7)).toBe('0.00000015');
    expect(formatValue(-2.5e22)).toBe('-25000000000000000000000');
    expect(formatValue(0.1)).toBe('0.1');
    expect(formatValue(Number.NaN)).toBe('NaN');
    expect(formatValue(Number.NEGATIVE_INFINITY)).toBe('-Inf');
  });
});
