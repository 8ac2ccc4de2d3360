import { describe, expect, it } from 'vitest';
import { decodeInfluxLines, influxTimestampMs, parseInfluxPrecision } from './decode.ts';

const NOW = 1_764_300_000_123;
const decode = (text: string, options: Record<string, unknown> = {}) => decodeInfluxLines(Buffer.from(text), { receivedAtMs: NOW, ...options });

describe('decodeInfluxLines', () => {
  it('makes measurement_field{tags} series of every numeric field', () => {
    const push = decode(
      [
        'cpu,host=h1,cpu=cpu-total usage_user=1.5,usage_system=2i 1764300000000000000',
        'cpu,host=h1,cpu=cpu-total usage_user=2.5,usage_system=3u 1764300010000000000',
      ].join('\n'),
    );
    expect(push.series).toEqual([
      {
        name: 'cpu_usage_user{cpu="cpu-total",host="h1"}',
        metric: 'cpu_usage_user',
        labels: [
          ['cpu', 'cpu-total'],
          ['host', 'h1'],
        ],
        timestamps: [1_764_300_000_000, 1_764_300_010_000],
        values: [1.5, 2.5],
      },
      {
        name: 'cpu_usage_system{cpu="cpu-total",host="h1"}',
        metric: 'cpu_usage_system',
        labels: [
          ['cpu', 'cpu-total'],
          ['host', 'h1'],
        ],
        timestamps: [1_764_300_000_000, 1_764_300_010_000],
        values: [2, 3],
      },
    ]);
    expect(push.rejected).toEqual([]);
  });

  it('stores booleans as 1 and 0, drops and counts strings, and times a line without timestamp at receipt', () => {
    const push = decode('svc up=true,down=F,status="ok, really",note="a \\"q\\""');
    expect(push.series.map((s) => [s.name, s.timestamps, s.values])).toEqual([
      ['svc_up', [NOW], [1]],
      ['svc_down', [NOW], [0]],
    ]);
    expect(push.dropped.stringFields).toBe(2);
  });

  it('unescapes commas, spaces and equals signs, sanitises tag keys and quotes values', () => {
    const push = decode('disk\\ io,path=/mnt/a\\,b,dev\\ name=sd\\=a,host.name=x value=1 1764300000000000000');
    expect(push.series[0]!.name).toBe('disk io_value{dev_name="sd=a",host_name="x",path="/mnt/a,b"}');
  });

  it('skips blank lines, comments and CRLF endings', () => {
    const push = decode('# a comment\r\n\r\n   \nm v=1 1\r\n  # indented comment\n', { precision: 's' });
    expect(push.series).toEqual([{ name: 'm_v', metric: 'm_v', labels: [], timestamps: [1000], values: [1] }]);
  });

  it('reports each bad line by number and reason and writes the good ones (partial write)', () => {
    const push = decode(
      [
        'm v=1 1764300000000000000',
        'm v=abc 1764300000000000000',
        'm',
        'm,t v=1',
        'm v=1,w=2 notanumber',
        'm v=1 1764300000000000000 extra',
        'm v="unterminated',
        ',t=1 v=1',
        'm v=1e999',
        'm v=1 1764300001000000000',
      ].join('\n'),
    );
    expect(push.series[0]!.values).toEqual([1, 1]);
    expect(push.rejected).toEqual([
      { where: 'line 2', reason: 'field v: invalid value "abc"', points: 1 },
      { where: 'line 3', reason: 'missing fields', points: 1 },
      { where: 'line 4', reason: 'tag "t" has no value', points: 1 },
      { where: 'line 5', reason: 'invalid timestamp "notanumber": an integer of ns is expected', points: 2 },
      { where: 'line 6', reason: 'unexpected text after the timestamp: "extra"', points: 1 },
      { where: 'line 7', reason: 'field v: unterminated string', points: 1 },
      { where: 'line 8', reason: 'missing measurement', points: 1 },
      { where: 'line 9', reason: 'field v: 1e999 is out of the range of a 64-bit float', points: 1 },
    ]);
    expect(push.rejectedPoints).toBe(9);
  });

  it('refuses a line past the line bound without reading it, and keeps the rest', () => {
    const push = decode(`m v=1 1\nm,t=${'x'.repeat(100)} v=1 1\nm v=2 2`, { maxLineLength: 64, precision: 'ms' });
    expect(push.rejected).toEqual([{ where: 'line 2', reason: 'the line is longer than 64 characters', points: 1 }]);
    expect(push.series[0]!.values).toEqual([1, 2]);
  });

  it('refuses a series whose name is too long, per field', () => {
    const push = decode(`m,t=${'x'.repeat(250)} v=1 1`, { precision: 'ms' });
    expect(push.rejected).toEqual([{ where: 'line 1 field v', reason: 'series name must be at most 256 characters (has 259)', points: 1 }]);
  });

  it('refuses a request past the samples or series bound, and a body over the byte bound', () => {
    const lines = Array.from({ length: 20 }, (_, i) => `m${i} v=1 1`).join('\n');
    expect(() => decode(lines, { maxSeries: 10 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
    expect(() => decode('m v=1,w=2,x=3 1', { maxSamples: 2 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
    expect(() => decode('m v=1 1', { maxBytes: 4 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
  });

  it('refuses a body that is not UTF-8', () => {
    expect(() => decodeInfluxLines(Uint8Array.from([0x6d, 0x20, 0xff]), { receivedAtMs: NOW })).toThrow(expect.objectContaining({ code: 'validation' }));
  });

  it('refuses timestamps outside 1970 to 2105 per point', () => {
    const push = decode('m v=1 -1000', { precision: 's' });
    expect(push.rejected[0]!.reason).toBe('timestamp -1000000 ms is outside 1970-01-01 to 2105-12-31');
  });
});

describe('influxTimestampMs', () => {
  it.each<[string, string, number | null]>([
    ['1764300000123456789', 'ns', 1_764_300_000_123],
    ['1764300000123456', 'us', 1_764_300_000_123],
    ['1764300000123', 'ms', 1_764_300_000_123],
    ['1764300000', 's', 1_764_300_000_000],
    ['29405000', 'm', 1_764_300_000_000],
    ['490083', 'h', 1_764_298_800_000],
    ['999999', 'ns', 0],
    ['-1', 'ns', -1],
    ['-1000000', 'ns', -1],
    ['12345678901234567890', 'ns', null],
    ['1.5', 's', null],
    ['', 's', null],
  ])('%s %s is %s', (text, precision, ms) => {
    expect(influxTimestampMs(text, parseInfluxPrecision(precision)!)).toBe(ms);
  });

  it('reads v1 and v2 precision names', () => {
    expect(['n', 'ns', 'u', 'us', 'µs', 'ms', 's', 'm', 'h', undefined, 'd'].map((p) => parseInfluxPrecision(p))).toEqual([
      'ns',
      'ns',
      'us',
      'us',
      'us',
      'ms',
      's',
      'm',
      'h',
      'ns',
      null,
    ]);
  });
});

describe('integer fields', () => {
  it('accepts the 64-bit bounds and refuses past them', () => {
    const push = decode('m a=9223372036854775807i,b=-9223372036854775808i,c=18446744073709551615u 1', { precision: 'ms' });
    expect(push.rejected).toEqual([]);
    expect(decode('m a=9223372036854775808i 1', { precision: 'ms' }).rejected[0]!.reason).toBe(
      'field a: integer 9223372036854775808 is out of the range of a 64-bit integer',
    );
    expect(decode('m a=18446744073709551616u 1', { precision: 'ms' }).rejected[0]!.reason).toBe(
      'field a: unsigned integer 18446744073709551616 is out of the range of a 64-bit unsigned integer',
    );
    expect(decode('m a=-1u 1', { precision: 'ms' }).rejected[0]!.reason).toBe('field a: invalid unsigned integer "-1u"');
  });
});

describe('refusals past the listed ones', () => {
  it('lists the first maxRejectionsListed and counts them all', () => {
    const lines = Array.from({ length: 250 }, (_, i) => `m v=bad${i} 1`).join('\n');
    const push = decode(lines, { precision: 'ms', maxRejectionsListed: 100 });
    expect(push.rejected).toHaveLength(100);
    expect(push.rejected[99]!.where).toBe('line 100');
    expect(push.rejectedPoints).toBe(250);
  });
});
