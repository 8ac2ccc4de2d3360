import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { compressSync as compress } from 'snappy';
import { describe, expect, it } from 'vitest';
import { MAX_CHAIN, SeriesNameCache } from '../name-cache.ts';
import { decodeRemoteWrite, decodeRemoteWriteBody, decodeRemoteWriteV2 } from './decode.ts';

// The tests encode with the .proto files the decoder follows, through protobufjs' reflection.
const v1 = protobuf.loadSync(fileURLToPath(new URL('./remote-write.proto', import.meta.url))).lookupType('prometheus.WriteRequest');
const v2 = protobuf.loadSync(fileURLToPath(new URL('./remote-write-v2.proto', import.meta.url))).lookupType('io.prometheus.write.v2.Request');

// A NaN's bits survive in an object, not in an array of numbers (V8 makes NaNs in double
// arrays the one NaN), so samples with a stale marker are given as objects.
type Sample = [number, number] | { timestamp: number; value: number };
type Series = { labels: Record<string, string>; samples: Sample[] };
const encode = (series: Series[]): Uint8Array =>
  v1
    .encode(
      v1.fromObject({
        timeseries: series.map((s) => ({
          labels: Object.entries(s.labels).map(([name, value]) => ({ name, value })),
          samples: s.samples.map((p) => (Array.isArray(p) ? { timestamp: p[0], value: p[1] } : p)),
        })),
      }),
    )
    .finish();

const STALE = new Float64Array(new BigUint64Array([0x7ff0000000000002n]).buffer)[0]!;
const T = 1_764_300_000_000;

describe('decodeRemoteWrite', () => {
  it('names each series canonically and keeps its samples as columns', () => {
    const push = decodeRemoteWrite(
      encode([
        {
          labels: { __name__: 'http_requests_total', job: 'api', code: '200' },
          samples: [
            [T, 1],
            [T + 15_000, 2.5],
          ],
        },
        { labels: { __name__: 'up', instance: 'localhost:9100', job: 'node' }, samples: [[T, 1]] },
      ]),
    );
    expect(push.series).toEqual([
      {
        name: 'http_requests_total{code="200",job="api"}',
        metric: 'http_requests_total',
        labels: [
          ['code', '200'],
          ['job', 'api'],
        ],
        timestamps: [T, T + 15_000],
        values: [1, 2.5],
      },
      {
        name: 'up{instance="localhost:9100",job="node"}',
        metric: 'up',
        labels: [
          ['instance', 'localhost:9100'],
          ['job', 'node'],
        ],
        timestamps: [T],
        values: [1],
      },
    ]);
    expect(push).toMatchObject({ rejected: [], rejectedPoints: 0, samples: 3, dropped: { staleMarkers: 0, stringFields: 0 } });
  });

  it('merges a series sent twice and keeps labels whatever their order on the wire', () => {
    const push = decodeRemoteWrite(
      encode([
        { labels: { b: '2', __name__: 'm', a: '1' }, samples: [[T, 1]] },
        { labels: { __name__: 'm', a: '1', b: '2' }, samples: [[T + 1, 2]] },
      ]),
    );
    expect(push.series).toHaveLength(1);
    expect(push.series[0]).toMatchObject({ name: 'm{a="1",b="2"}', timestamps: [T, T + 1], values: [1, 2] });
  });

  it('drops stale markers and counts them; refuses other NaNs and infinities per point', () => {
    const push = decodeRemoteWrite(
      encode([{ labels: { __name__: 'm' }, samples: [[T, 1], { timestamp: T + 1, value: STALE }, [T + 2, Number.NaN], [T + 3, Infinity]] }]),
    );
    expect(push.series[0]).toMatchObject({ timestamps: [T], values: [1] });
    expect(push.dropped.staleMarkers).toBe(1);
    expect(push.rejected).toEqual([
      { where: `m at ${T + 2}`, reason: 'value NaN is not a finite number', points: 1 },
      { where: `m at ${T + 3}`, reason: 'value Infinity is not a finite number', points: 1 },
    ]);
  });

  it('refuses a series without a name, with a bad label name or too long a name, and keeps the others', () => {
    const push = decodeRemoteWrite(
      encode([
        { labels: { job: 'x' }, samples: [[T, 1]] },
        {
          labels: { __name__: 'm', 'a.b': 'x' },
          samples: [
            [T, 1],
            [T + 1, 2],
          ],
        },
        { labels: { __name__: 'm', a: 'v'.repeat(250) }, samples: [[T, 1]] },
        { labels: { __name__: 'ok' }, samples: [[T, 1]] },
      ]),
    );
    expect(push.series.map((s) => s.name)).toEqual(['ok']);
    expect(push.rejected.map((r) => [r.reason, r.points])).toEqual([
      ['the series has no __name__ label', 1],
      ['label name "a.b" must match [A-Za-z_][A-Za-z0-9_]*', 2],
      ['series name must be at most 256 characters (has 257)', 1],
    ]);
    expect(push.rejected[0]!.where).toBe('{job="x"}');
    expect(push.rejectedPoints).toBe(4);
  });

  it('refuses timestamps outside 1970 to 2105', () => {
    const push = decodeRemoteWrite(
      encode([
        {
          labels: { __name__: 'm' },
          samples: [
            [-1, 1],
            [4_291_747_200_000, 1],
          ],
        },
      ]),
    );
    expect(push.series).toEqual([]);
    expect(push.rejectedPoints).toBe(2);
  });

  it('refuses a whole request past the series or samples bound (413) and a forged length (400)', () => {
    const many = Array.from({ length: 11 }, (_, i) => ({ labels: { __name__: `m${i}` }, samples: [[T, 1]] as Sample[] }));
    expect(() => decodeRemoteWrite(encode(many), { maxSeries: 10 })).toThrow(
      expect.objectContaining({ code: 'payload_too_large', message: 'more than 10 series in one request: send fewer per request' }),
    );
    expect(() => decodeRemoteWrite(encode(many), { maxSamples: 10 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
    const forged = Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a, 0x00]);
    expect(() => decodeRemoteWrite(forged)).toThrow(expect.objectContaining({ code: 'validation' }));
    expect(() => decodeRemoteWrite(Uint8Array.from([0x0a, 0x05, 0x0a, 0x03]))).toThrow(expect.objectContaining({ code: 'validation' }));
  });

  it('counts labels past the bound without keeping them, and refuses that series', () => {
    const labels: Record<string, string> = { __name__: 'm' };
    for (let i = 0; i < 1000; i++) labels[`l${i}`] = 'x';
    const push = decodeRemoteWrite(encode([{ labels, samples: [[T, 1]] }]), { maxLabels: 4 });
    expect(push.rejected[0]!.reason).toBe('has 1000 labels, more than 4');
    expect(push.rejected[0]!.where.length).toBeLessThanOrEqual(203);
  });

  it('refuses label names and values past their length bounds', () => {
    const push = decodeRemoteWrite(
      encode([
        { labels: { __name__: 'm', ['n'.repeat(9)]: 'x' }, samples: [[T, 1]] },
        { labels: { __name__: 'm', a: 'v'.repeat(9) }, samples: [[T, 1]] },
        { labels: { __name__: 'm', ['n'.repeat(8)]: 'v'.repeat(8) }, samples: [[T, 1]] },
      ]),
      { maxLabelNameLength: 8, maxLabelValueLength: 8 },
    );
    expect(push.rejected.map((r) => r.reason)).toEqual([
      'label name "nnnnnnnnn"... is longer than 8 characters',
      'the value of label a is longer than 8 characters',
    ]);
    expect(push.series).toHaveLength(1);
  });

  it('refuses an uncompressed body over the byte bound', () => {
    expect(() => decodeRemoteWrite(encode([{ labels: { __name__: 'm' }, samples: [[T, 1]] }]), { maxBytes: 8 })).toThrow(
      expect.objectContaining({ code: 'payload_too_large' }),
    );
  });

  it('a huge repeated field of empty series is refused by the series bound, not held', () => {
    const body = new Uint8Array(2 * 200_000);
    for (let i = 0; i < body.length; i += 2) body[i] = 0x0a; // 200,000 empty TimeSeries
    expect(() => decodeRemoteWrite(body, { maxSeries: 1000 })).toThrow(expect.objectContaining({ code: 'payload_too_large' }));
  });
});

describe('a SeriesNameCache kept across requests', () => {
  const series: Series[] = [
    { labels: { __name__: 'http_requests_total', job: 'api', code: '200' }, samples: [[T, 1]] },
    { labels: { __name__: 'up', job: 'api' }, samples: [[T, 1], { timestamp: T + 1, value: STALE }] },
    { labels: { __name__: 'bad', 'a.b': 'x' }, samples: [[T, 1]] },
  ];

  it('decodes as without it, and names a series sent again from the cache', () => {
    const names = new SeriesNameCache();
    const without = decodeRemoteWrite(encode(series));
    expect(decodeRemoteWrite(encode(series), { names })).toEqual(without);
    expect(names.size).toBe(2); // refused series are not kept
    expect(decodeRemoteWrite(encode(series), { names })).toEqual(without);
    expect(names.size).toBe(2);
  });

  it('tells series apart by their bytes when their hashes collide', () => {
    const names = new SeriesNameCache(1000, () => 7);
    const without = decodeRemoteWrite(encode(series));
    expect(decodeRemoteWrite(encode(series), { names })).toEqual(without);
    expect(decodeRemoteWrite(encode(series), { names })).toEqual(without);
    expect(names.size).toBe(2);
  });

  it('keeps at most MAX_CHAIN names under one hash: label sets made to collide are named again, not chained', () => {
    const names = new SeriesNameCache(1000, () => 7);
    const many: Series[] = Array.from({ length: MAX_CHAIN + 5 }, (_, i) => ({ labels: { __name__: 'm', i: String(i) }, samples: [[T, i]] }));
    const without = decodeRemoteWrite(encode(many));
    expect(decodeRemoteWrite(encode(many), { names })).toEqual(without);
    expect(names.size).toBe(MAX_CHAIN);
    expect(decodeRemoteWrite(encode(many), { names })).toEqual(without);
    expect(names.size).toBe(MAX_CHAIN);
  });

  it('draws its hash per cache: the same label bytes land under other hashes in two caches', () => {
    const bytes = new TextEncoder().encode('job=api');
    const hashes = new Set(
      Array.from({ length: 8 }, () =>
        (new SeriesNameCache() as unknown as { hash: (b: Uint8Array, s: number, e: number) => number }).hash(bytes, 0, bytes.length),
      ),
    );
    expect(hashes.size).toBeGreaterThan(1);
  });

  it('is emptied when the limits change, and when full', () => {
    const names = new SeriesNameCache(1);
    decodeRemoteWrite(encode(series), { names });
    expect(names.size).toBe(1);
    const push = decodeRemoteWrite(encode(series), { names, maxLabelValueLength: 2 });
    expect(push.rejected.map((r) => r.reason)).toContain('the value of label job is longer than 2 characters');
  });

  it('reads labels sent after samples as well (no cache key then)', () => {
    const names = new SeriesNameCache();
    const L = v1.lookupTypeOrEnum('prometheus.Label');
    const S = v1.lookupTypeOrEnum('prometheus.Sample');
    const w = protobuf.Writer.create();
    const ts = protobuf.Writer.create();
    L.encode({ name: '__name__', value: 'm' }, ts.uint32(10).fork()).ldelim();
    S.encode({ value: 2, timestamp: T }, ts.uint32(18).fork()).ldelim();
    L.encode({ name: 'job', value: 'late' }, ts.uint32(10).fork()).ldelim();
    const tsBytes = ts.finish();
    w.uint32(10).bytes(tsBytes);
    const body = w.finish();
    for (let i = 0; i < 2; i++) expect(decodeRemoteWrite(body, { names }).series.map((s) => s.name)).toEqual(['m{job="late"}']);
    expect(names.size).toBe(0);
  });
});

describe('decodeRemoteWriteBody', () => {
  it('uncompresses the snappy block and decodes it', () => {
    const body = compress(Buffer.from(encode([{ labels: { __name__: 'up' }, samples: [[T, 1]] }])));
    expect(decodeRemoteWriteBody(body, '1.0').series[0]).toMatchObject({ name: 'up', values: [1] });
  });

  it('refuses a snappy bomb by its declared length before allocating', () => {
    // A preamble declaring 1 GiB and a few bytes of stream.
    const bomb = Uint8Array.from([0x80, 0x80, 0x80, 0x80, 0x04, 0x00, 0x61]);
    expect(() => decodeRemoteWriteBody(bomb, '1.0')).toThrow(
      expect.objectContaining({ code: 'payload_too_large', message: 'the body declares 1073741824 bytes uncompressed, more than 8388608' }),
    );
    const forged = Uint8Array.from([0x80, 0x80, 0x10, 0x00, 0x61]); // 256 KiB from 5 bytes
    expect(() => decodeRemoteWriteBody(forged, '1.0')).toThrow(expect.objectContaining({ code: 'validation' }));
  });

  it('refuses a literal whose 4-byte length is negative as a 32-bit integer (a JavaScript snappy looped forever on it)', () => {
    // 1892 bytes declared, then a literal (tag 0xfc: a 4-byte length) of length 0x8d8e7c75 + 1.
    const forged = Uint8Array.from([0xe4, 0x0e, 0xfc, 0x75, 0x7c, 0x8e, 0x8d, ...Array<number>(140).fill(0x61)]);
    for (let i = 0; i < 3; i++) expect(() => decodeRemoteWriteBody(forged, '1.0')).toThrow(expect.objectContaining({ code: 'validation' }));
  });

  it('refuses a body that is not snappy', () => {
    expect(() => decodeRemoteWriteBody(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), '1.0')).toThrow(expect.objectContaining({ code: 'validation' }));
  });

  it('reads remote write 2.0 with its symbols table', () => {
    const bytes = v2
      .encode(
        v2.fromObject({
          symbols: ['', '__name__', 'http_requests_total', 'job', 'api', 'code', '200'],
          timeseries: [
            {
              labelsRefs: [1, 2, 5, 6, 3, 4],
              samples: [
                { value: 3, timestamp: T },
                { value: STALE, timestamp: T + 1 },
              ],
            },
          ],
        }),
      )
      .finish();
    const push = decodeRemoteWriteV2(bytes);
    expect(push.series).toEqual([
      {
        name: 'http_requests_total{code="200",job="api"}',
        metric: 'http_requests_total',
        labels: [
          ['code', '200'],
          ['job', 'api'],
        ],
        timestamps: [T],
        values: [3],
      },
    ]);
    expect(push.dropped.staleMarkers).toBe(1);
    expect(decodeRemoteWriteBody(compress(Buffer.from(bytes)), '2.0').samples).toBe(1);
  });

  it('refuses a 2.0 label reference past the symbols', () => {
    const bytes = v2
      .encode(v2.fromObject({ symbols: ['', '__name__', 'm'], timeseries: [{ labelsRefs: [1, 9], samples: [{ value: 1, timestamp: T }] }] }))
      .finish();
    expect(() => decodeRemoteWriteV2(bytes)).toThrow(
      expect.objectContaining({ code: 'validation', message: 'a label refers to symbol 9, past the 3 symbols' }),
    );
  });
});
