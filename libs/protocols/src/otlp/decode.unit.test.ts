import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { decodeOtlpMetrics } from './decode.ts';
import { formatFloat, otlpMetricName, unitSuffixes } from './metric-name.ts';
import { otlpPartialSuccess } from './to-series.ts';

// Requests are written once as OTLP/JSON and encoded to protobuf with metrics.proto, so every
// case checks both decoders against the same expectation.
const root = protobuf.loadSync(fileURLToPath(new URL('./metrics.proto', import.meta.url)));
const Request = root.lookupType('opentelemetry.proto.metrics.v1.ExportMetricsServiceRequest');
const toProtobuf = (json: unknown) => Request.encode(Request.fromObject(json as Record<string, unknown>)).finish();

const NS = '1764300000123456789';
const MS = 1_764_300_000_123;
const attr = (key: string, value: unknown) => ({ key, value: typeof value === 'string' ? { stringValue: value } : value });
const request = (metrics: unknown[], resource: unknown[] = [attr('service.name', 'checkout'), attr('service.instance.id', 'pod-1')]) => ({
  resourceMetrics: [{ resource: { attributes: resource }, scopeMetrics: [{ scope: { name: 'test' }, metrics }] }],
});

const both = (json: unknown, options = {}) => {
  const fromJson = decodeOtlpMetrics(Buffer.from(JSON.stringify(json)), 'json', options);
  const fromProtobuf = decodeOtlpMetrics(toProtobuf(json), 'protobuf', options);
  expect(fromProtobuf).toEqual(fromJson);
  return fromJson;
};
const names = (push: ReturnType<typeof both>) => push.series.map((s) => [s.name, s.timestamps, s.values]);

describe('decodeOtlpMetrics', () => {
  it('a gauge: its name with the unit, attributes and job/instance as labels', () => {
    const push = both(
      request([
        {
          name: 'process.memory.usage',
          unit: 'By',
          gauge: { dataPoints: [{ attributes: [attr('memory.type', 'heap')], timeUnixNano: NS, asDouble: 1024.5 }] },
        },
      ]),
    );
    expect(names(push)).toEqual([['process_memory_usage_bytes{instance="pod-1",job="checkout",memory_type="heap"}', [MS], [1024.5]]]);
  });

  it('a monotonic cumulative sum ends in _total; a non-monotonic one does not; int values', () => {
    const push = both(
      request(
        [
          {
            name: 'http.server.requests',
            unit: '{request}',
            sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ timeUnixNano: NS, asInt: '42' }] },
          },
          { name: 'queue.depth', unit: '1', sum: { aggregationTemporality: 2, isMonotonic: false, dataPoints: [{ timeUnixNano: NS, asInt: 7 }] } },
          { name: 'cpu.utilization', unit: '1', gauge: { dataPoints: [{ timeUnixNano: NS, asDouble: 0.25 }] } },
        ],
        [],
      ),
    );
    expect(names(push)).toEqual([
      ['http_server_requests_total', [MS], [42]],
      ['queue_depth', [MS], [7]],
      ['cpu_utilization_ratio', [MS], [0.25]],
    ]);
  });

  it('a delta sum is stored as sent, named without _total', () => {
    const push = both(
      request(
        [
          {
            name: 'jobs.done',
            sum: { aggregationTemporality: 'AGGREGATION_TEMPORALITY_DELTA', isMonotonic: true, dataPoints: [{ timeUnixNano: NS, asInt: '3' }] },
          },
        ],
        [],
      ),
    );
    expect(names(push)).toEqual([['jobs_done', [MS], [3]]]);
  });

  it('a histogram: cumulative _bucket{le}, +Inf the count, _sum and _count', () => {
    const push = both(
      request(
        [
          {
            name: 'http.server.duration',
            unit: 'ms',
            histogram: {
              aggregationTemporality: 2,
              dataPoints: [{ timeUnixNano: NS, count: '6', sum: 123.5, bucketCounts: ['1', '2', '3'], explicitBounds: [0.0000001, 100] }],
            },
          },
        ],
        [attr('service.name', 'api'), attr('service.namespace', 'shop')],
      ),
    );
    expect(names(push)).toEqual([
      ['http_server_duration_milliseconds_bucket{job="shop/api",le="0.0000001"}', [MS], [1]],
      ['http_server_duration_milliseconds_bucket{job="shop/api",le="100"}', [MS], [3]],
      ['http_server_duration_milliseconds_bucket{job="shop/api",le="+Inf"}', [MS], [6]],
      ['http_server_duration_milliseconds_sum{job="shop/api"}', [MS], [123.5]],
      ['http_server_duration_milliseconds_count{job="shop/api"}', [MS], [6]],
    ]);
  });

  it('a summary: quantile series, _sum and _count', () => {
    const push = both(
      request(
        [
          {
            name: 'rpc.latency',
            unit: 's',
            summary: {
              dataPoints: [
                {
                  timeUnixNano: NS,
                  count: '10',
                  sum: 2.5,
                  quantileValues: [
                    { quantile: 0.5, value: 0.2 },
                    { quantile: 0.99, value: 0.9 },
                  ],
                },
              ],
            },
          },
        ],
        [],
      ),
    );
    expect(names(push)).toEqual([
      ['rpc_latency_seconds{quantile="0.5"}', [MS], [0.2]],
      ['rpc_latency_seconds{quantile="0.99"}', [MS], [0.9]],
      ['rpc_latency_seconds_sum', [MS], [2.5]],
      ['rpc_latency_seconds_count', [MS], [10]],
    ]);
  });

  it('sanitises attribute names and writes non-string values as text', () => {
    const push = both(
      request(
        [
          {
            name: 'm',
            gauge: {
              dataPoints: [
                {
                  timeUnixNano: NS,
                  asDouble: 1,
                  attributes: [
                    attr('http.status_code', { intValue: '200' }),
                    attr('ok', { boolValue: true }),
                    attr('ratio', { doubleValue: 0.5 }),
                    attr('2xx', 'yes'),
                    attr('a.b', '1'),
                    attr('a_b', '2'),
                    attr('tags', { arrayValue: { values: [{ stringValue: 'x' }, { intValue: '1' }] } }),
                  ],
                },
              ],
            },
          },
        ],
        [],
      ),
    );
    expect(push.series[0]!.name).toBe('m{a_b="1;2",http_status_code="200",key_2xx="yes",ok="true",ratio="0.5",tags="[\\"x\\",1]"}');
  });

  it('resource job and instance win over point attributes of those names', () => {
    const push = both(request([{ name: 'm', gauge: { dataPoints: [{ timeUnixNano: NS, asDouble: 1, attributes: [attr('job', 'mine')] }] } }]));
    expect(push.series[0]!.name).toBe('m{instance="pod-1",job="checkout"}');
  });

  it('drops points with no recorded value, refuses exponential histograms, unspecified temporality and bad values', () => {
    const push = both(
      request(
        [
          {
            name: 'g',
            gauge: {
              dataPoints: [
                { timeUnixNano: NS, asDouble: 1 },
                { timeUnixNano: NS, asDouble: 0, flags: 1 },
                { timeUnixNano: NS, asDouble: 'NaN' },
              ],
            },
          },
          {
            name: 'e',
            exponentialHistogram: {
              aggregationTemporality: 2,
              dataPoints: [
                { timeUnixNano: NS, count: '1' },
                { timeUnixNano: NS, count: '1' },
              ],
            },
          },
          { name: 's', sum: { aggregationTemporality: 0, isMonotonic: true, dataPoints: [{ timeUnixNano: NS, asInt: '1' }] } },
        ],
        [],
      ),
    );
    expect(names(push)).toEqual([['g', [MS], [1]]]);
    expect(push.dropped.staleMarkers).toBe(1);
    expect(push.rejected).toEqual([
      { where: 'metric "g" data point 2', reason: 'value NaN is not a finite number', points: 1 },
      { where: 'metric "e"', reason: 'exponential histograms are not stored (configure the sender for explicit-bucket histograms)', points: 2 },
      { where: 'metric "s"', reason: 'aggregation temporality is unspecified', points: 1 },
    ]);
    expect(otlpPartialSuccess(push)).toEqual({
      rejectedDataPoints: 4,
      errorMessage:
        '4 data points refused: metric "g" data point 2: value NaN is not a finite number; metric "e": exponential histograms are not stored (configure the sender for explicit-bucket histograms); metric "s": aggregation temporality is unspecified',
    });
  });

  it('counts a histogram data point refused as one data point, its samples as samples', () => {
    const push = both(
      request(
        [
          {
            name: 'h',
            histogram: {
              aggregationTemporality: 2,
              dataPoints: [
                { timeUnixNano: NS, count: '2', sum: 1, bucketCounts: ['1', '1'], explicitBounds: [1] },
                { timeUnixNano: NS, count: '2', sum: 'NaN', bucketCounts: ['1', '1'], explicitBounds: [1], attributes: [attr('k', 'v')] },
                { timeUnixNano: NS, count: '2', bucketCounts: ['1'], explicitBounds: [1, 2], attributes: [attr('k', 'w')] },
              ],
            },
          },
        ],
        [],
      ),
    );
    expect(push.rejectedPoints).toBe(1 + 5);
    expect(push.rejectedDataPoints).toBe(2);
    expect(otlpPartialSuccess(push)!.rejectedDataPoints).toBe(2);
    expect(otlpPartialSuccess(both(request([{ name: 'g', gauge: { dataPoints: [{ timeUnixNano: NS, asDouble: 1 }] } }], [])))).toBeNull();
  });

  it('refuses a point with more attributes than labels allowed, without holding them', () => {
    const attributes = Array.from({ length: 500 }, (_, i) => attr(`a${i}`, 'x'));
    const push = both(request([{ name: 'm', gauge: { dataPoints: [{ timeUnixNano: NS, asDouble: 1, attributes }] } }], []), { maxLabels: 8 });
    expect(push.rejected).toEqual([{ where: 'metric "m" data point 0', reason: 'has 500 attributes, more than 8', points: 1 }]);
  });

  it('refuses a request past the samples bound, counting histogram buckets', () => {
    const json = request(
      [
        {
          name: 'h',
          histogram: {
            aggregationTemporality: 2,
            dataPoints: [{ timeUnixNano: NS, count: '1', bucketCounts: Array(100).fill('0'), explicitBounds: Array.from({ length: 99 }, (_, i) => i) }],
          },
        },
      ],
      [],
    );
    expect(() => decodeOtlpMetrics(toProtobuf(json), 'protobuf', { maxSamples: 50 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
    expect(() => decodeOtlpMetrics(Buffer.from(JSON.stringify(json)), 'json', { maxSamples: 50 })).toThrow(
      expect.objectContaining({ code: 'payload_too_large' }),
    );
  });

  it('refuses a body over the byte bound before reading it', () => {
    const json = request([{ name: 'm', gauge: { dataPoints: [{ timeUnixNano: NS, asDouble: 1 }] } }]);
    expect(() => decodeOtlpMetrics(toProtobuf(json), 'protobuf', { maxBytes: 16 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
    expect(() => decodeOtlpMetrics(Buffer.from(JSON.stringify(json)), 'json', { maxBytes: 16 })).toThrow(
      expect.objectContaining({ code: 'payload_too_large' }),
    );
  });

  it('refuses an attribute value nested past the depth bound', () => {
    let value: unknown = { stringValue: 'x' };
    for (let i = 0; i < 12; i++) value = { arrayValue: { values: [value] } };
    const json = request([{ name: 'm', gauge: { dataPoints: [{ timeUnixNano: NS, asDouble: 1, attributes: [attr('deep', value)] }] } }], []);
    expect(() => decodeOtlpMetrics(toProtobuf(json), 'protobuf')).toThrow(expect.objectContaining({ code: 'validation' }));
    expect(() => decodeOtlpMetrics(Buffer.from(JSON.stringify(json)), 'json')).toThrow(expect.objectContaining({ code: 'validation' }));
  });

  it('refuses a huge repeated field of empty metrics by the series bound', () => {
    const json = request(
      Array.from({ length: 2000 }, () => ({})),
      [],
    );
    expect(() => decodeOtlpMetrics(toProtobuf(json), 'protobuf', { maxSeries: 1000 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
  });

  it('refuses malformed bodies: a forged length, bad JSON, a wrong JSON type', () => {
    expect(() => decodeOtlpMetrics(Uint8Array.from([0x0a, 0xff, 0xff, 0x03, 0x12]), 'protobuf')).toThrow(expect.objectContaining({ code: 'validation' }));
    expect(() => decodeOtlpMetrics(Buffer.from('{"resourceMetrics": ['), 'json')).toThrow(expect.objectContaining({ code: 'validation' }));
    expect(() => decodeOtlpMetrics(Buffer.from('{"resourceMetrics": {}}'), 'json')).toThrow(
      expect.objectContaining({ code: 'validation', message: 'resourceMetrics must be an array' }),
    );
  });

  it('reads snake_case names as a proto3 JSON parser does', () => {
    const push = decodeOtlpMetrics(
      Buffer.from(
        JSON.stringify({
          resource_metrics: [{ scope_metrics: [{ metrics: [{ name: 'm', gauge: { data_points: [{ time_unix_nano: NS, as_double: 2 }] } }] }] }],
        }),
      ),
      'json',
    );
    expect(names(push)).toEqual([['m', [MS], [2]]]);
  });
});

describe('otlpMetricName', () => {
  it.each<[string, string, Parameters<typeof otlpMetricName>[2], string]>([
    ['http.server.request.duration', 's', 'histogram', 'http_server_request_duration_seconds'],
    ['requests.count', '1', 'monotonic_counter', 'requests_count_total'],
    ['memory.usage', 'By', 'gauge', 'memory_usage_bytes'],
    ['system.network.io', 'By/s', 'gauge', 'system_network_io_bytes_per_second'],
    ['foo_total', '', 'monotonic_counter', 'foo_total'],
    ['duration_seconds', 's', 'histogram', 'duration_seconds'],
    ['a..b__c', '', 'gauge', 'a_b_c'],
    ['2xx.responses', '{response}', 'counter', '_2xx_responses'],
    ['cpu.util', '1', 'gauge', 'cpu_util_ratio'],
    ['http.requests', 'custom unit', 'gauge', 'http_requests_custom_unit'],
  ])('%s [%s] %s is %s', (name, unit, kind, expected) => {
    expect(otlpMetricName(name, unit, kind)).toBe(expected);
  });

  it('splits units into main and per parts', () => {
    expect(unitSuffixes('By/s')).toEqual(['bytes', 'per_second']);
    expect(unitSuffixes('{packets}/s')).toEqual(['', 'per_second']);
    expect(unitSuffixes('1')).toEqual(['', '']);
  });
});

describe('formatFloat', () => {
  it.each<[number, string]>([
    [0.005, '0.005'],
    [1e-7, '0.0000001'],
    [1e21, '1000000000000000000000'],
    [-2.5e-8, '-0.000000025'],
    [1.5e22, '15000000000000000000000'],
    [Infinity, '+Inf'],
    [100, '100'],
  ])('%s is %s', (v, text) => {
    expect(formatFloat(v)).toBe(text);
  });
});
