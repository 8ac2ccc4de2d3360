import { describe, expect, it } from 'vitest';
import { compareCodePoints, parseSeriesName, seriesName, type Label } from './series-name.ts';

const name = (metric: string, labels: Label[]) => {
  const r = seriesName(metric, labels);
  if (!r.ok) throw new Error(r.reason);
  return r.name;
};
const reason = (metric: string, labels: Label[]) => {
  const r = seriesName(metric, labels);
  if (r.ok) throw new Error(`accepted ${r.name}`);
  return r.reason;
};

describe('seriesName', () => {
  it('is the bare name without labels', () => {
    expect(name('up', [])).toBe('up');
  });

  it('sorts labels by name and quotes values', () => {
    expect(
      name('http_requests_total', [
        ['method', 'GET'],
        ['code', '200'],
        ['job', 'api'],
      ]),
    ).toBe('http_requests_total{code="200",job="api",method="GET"}');
  });

  it('escapes backslash, quote and line feed as the exposition format does', () => {
    expect(name('m', [['path', 'C:\\dir "x"\nnext']])).toBe('m{path="C:\\\\dir \\"x\\"\\nnext"}');
  });

  it('keeps commas, braces and equals signs in values (they are quoted)', () => {
    expect(
      name('m', [
        ['a', 'x,y'],
        ['b', '{}='],
        ['c', 'k="v",z'],
      ]),
    ).toBe('m{a="x,y",b="{}=",c="k=\\"v\\",z"}');
  });

  it('leaves out labels with an empty value (Prometheus: empty means absent)', () => {
    expect(
      name('m', [
        ['a', ''],
        ['b', '1'],
      ]),
    ).toBe('m{b="1"}');
    expect(name('m', [['a', '']])).toBe('m');
  });

  it('sorts by code point, as UTF-8 bytes sort', () => {
    expect(compareCodePoints('\uffff', '😀')).toBeLessThan(0);
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('B', 'a')).toBeLessThan(0);
    expect(
      name('m', [
        ['b', '1'],
        ['B', '2'],
        ['_a', '3'],
      ]),
    ).toBe('m{B="2",_a="3",b="1"}');
  });

  it('refuses a name past 256 characters and never truncates', () => {
    const value = 'v'.repeat(256 - 'm{a=""}'.length);
    expect(name('m', [['a', value]])).toHaveLength(256);
    expect(reason('m', [['a', `${value}v`]])).toBe('series name must be at most 256 characters (has 257)');
  });

  it.each<[string, Label[], string]>([
    ['', [['a', '1']], 'the series has no metric name'],
    ['a{b', [['a', '1']], 'metric name "a{b" must not contain { } " or \\ when the series has labels'],
    ['m', [['a.b', '1']], 'label name "a.b" must match [A-Za-z_][A-Za-z0-9_]*'],
    ['m', [['1a', '1']], 'label name "1a" must match [A-Za-z_][A-Za-z0-9_]*'],
    ['m', [['__name__', 'x']], 'the label __name__ is the metric name, not a label'],
    [
      'm',
      [
        ['a', '1'],
        ['a', '2'],
      ],
      'label a is repeated',
    ],
    ['m', [['a', 'tab\there']], 'series name must not contain control characters (U+0009 at character 9)'],
    ['=cmd', [], 'series name must not start with "=" (spreadsheet formula injection)'],
  ])('refuses %j %j', (metric, labels, why) => {
    expect(reason(metric, labels)).toBe(why);
  });

  it('accepts a metric name with braces when it has no labels (a plain name)', () => {
    expect(name('a{b', [])).toBe('a{b');
  });
});

describe('parseSeriesName', () => {
  it.each<[string, Label[]]>([
    ['up', []],
    [
      'http_requests_total',
      [
        ['code', '200'],
        ['method', 'GET'],
      ],
    ],
    [
      'm',
      [
        ['path', 'C:\\dir "x"\nnext'],
        ['z', ',={}'],
      ],
    ],
    [
      'cpu_usage_user',
      [
        ['cpu', 'cpu-total'],
        ['host', 'h1'],
      ],
    ],
    ['指标', [['名', '值']].map(([a, b]) => [a!.replace(/./g, 'x'), b!] as Label)],
  ])('reads back what seriesName writes: %s', (metric, labels) => {
    const text = name(metric, labels);
    expect(parseSeriesName(text)).toEqual({ metric, labels: labels.filter((l) => l[1] !== '') });
  });

  it('reads a name without braces as a metric without labels', () => {
    expect(parseSeriesName('a,b c')).toEqual({ metric: 'a,b c', labels: [] });
  });

  it.each(['a{b', '{a="1"}', 'm{}', 'm{a="1",}', 'm{a="1"', 'm{a=1}', 'm{a="1"b="2"}', 'm{a="\\t"}', 'm{a.b="1"}', 'm{a="1"}x'])(
    'is null for %j, which is not the grammar',
    (text) => {
      expect(parseSeriesName(text)).toBeNull();
    },
  );
});
