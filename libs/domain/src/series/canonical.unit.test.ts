import { describe, expect, it } from 'vitest';
import { seriesName } from '../points/series-name.ts';
import { seriesLabels as parseSeriesName } from './canonical.ts';

describe('canonical series names', () => {
  it('reads a bare name as __name__ alone', () => {
    expect(parseSeriesName('http_requests_total')).toEqual([['__name__', 'http_requests_total']]);
  });

  it('reads labels, sorted, with the name first', () => {
    expect(parseSeriesName('up{instance="a:9090",job="api"}')).toEqual([
      ['__name__', 'up'],
      ['instance', 'a:9090'],
      ['job', 'api'],
    ]);
  });

  it('sorts the labels bytewise, __name__ among them, as Prometheus does', () => {
    expect(parseSeriesName('m{Zone="a",b="c"}')).toEqual([
      ['Zone', 'a'],
      ['__name__', 'm'],
      ['b', 'c'],
    ]);
  });

  it('undoes the three escapes', () => {
    expect(parseSeriesName('m{path="C:\\\\x",q="say \\"hi\\"",t="a\\nb"}')).toEqual([
      ['__name__', 'm'],
      ['path', 'C:\\x'],
      ['q', 'say "hi"'],
      ['t', 'a\nb'],
    ]);
  });

  it('keeps braces, commas and equals signs inside values', () => {
    expect(parseSeriesName('m{a="x,y=\\"{}\\"",b="}"}')).toEqual([
      ['__name__', 'm'],
      ['a', 'x,y="{}"'],
      ['b', '}'],
    ]);
  });

  it.each([
    ['unsorted labels', 'm{b="1",a="2"}'],
    ['a repeated label', 'm{a="1",a="2"}'],
    ['an empty value', 'm{a=""}'],
    ['empty braces', 'm{}'],
    ['no name before the braces', '{a="1"}'],
    ['a label name Prometheus would quote', 'm{a-b="1"}'],
    ['__name__ among the labels', 'm{__name__="x"}'],
    ['an unknown escape', 'm{a="\\t"}'],
    ['a raw newline', 'm{a="x\ny"}'],
    ['an unterminated value', 'm{a="1}'],
    ['text after the braces', 'm{a="1"}x'],
    ['a space after the comma', 'm{a="1", b="2"}'],
    ['single quotes', "m{a='1'}"],
  ])('reads a name with %s whole as __name__', (_, name) => {
    expect(parseSeriesName(name)).toEqual([['__name__', name]]);
  });

  it("reads every name the protocols' writer writes, whatever its metric name", () => {
    expect(parseSeriesName('cpu load{a="1"}')).toEqual([
      ['__name__', 'cpu load'],
      ['a', '1'],
    ]);
    expect(parseSeriesName('http.server.duration{le="0.5"}')).toEqual([
      ['__name__', 'http.server.duration'],
      ['le', '0.5'],
    ]);
  });

  it('reads any other string whole as the metric name', () => {
    expect(parseSeriesName('cpu:load')).toEqual([['__name__', 'cpu:load']]);
    expect(parseSeriesName('sensor 7 / temp °C')).toEqual([['__name__', 'sensor 7 / temp °C']]);
  });

  it('round-trips what the writer writes', () => {
    const written = seriesName('m', [
      ['job', 'a"b'],
      ['env', ''],
      ['b', 'x\\y\nz'],
    ]);
    expect(written).toMatchObject({ ok: true, name: 'm{b="x\\\\y\\nz",job="a\\"b"}' });
    expect(parseSeriesName((written as { name: string }).name)).toEqual([
      ['__name__', 'm'],
      ['b', 'x\\y\nz'],
      ['job', 'a"b'],
    ]);
  });
});
