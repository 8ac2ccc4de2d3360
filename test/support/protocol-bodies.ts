import protobuf from 'protobufjs/minimal.js';
import { compressSync } from 'snappy';

/**
 * Small valid bodies of the telemetry protocols, written here field by field (the decoders
 * under test read them; recordings of the real senders are in test/fixtures/protocols).
 */
export type SeriesSamples = { readonly labels: ReadonlyArray<readonly [string, string]>; readonly samples: ReadonlyArray<readonly [number, number]> };

const LEN = 2;
const tag = (w: protobuf.Writer, field: number, wire: number) => w.uint32((field << 3) | wire);

/** A snappy-compressed remote write 1.0 WriteRequest: labels (`__name__` among them) and [ms, value] samples per series. */
export function remoteWriteBody(series: readonly SeriesSamples[]): Buffer {
  const w = protobuf.Writer.create();
  for (const s of series) {
    tag(w, 1, LEN).fork();
    for (const [name, value] of s.labels) {
      tag(w, 1, LEN).fork();
      tag(w, 1, LEN).string(name);
      tag(w, 2, LEN).string(value);
      w.ldelim();
    }
    for (const [ts, value] of s.samples) {
      tag(w, 2, LEN).fork();
      tag(w, 1, 1).double(value);
      tag(w, 2, 0).int64(ts);
      w.ldelim();
    }
    w.ldelim();
  }
  return compressSync(Buffer.from(w.finish()));
}

/** An OTLP ExportMetricsServiceRequest of one gauge point, as protobuf or JSON. */
export function otlpGaugeBody(name: string, service: string, unixMs: number, value: number, format: 'protobuf' | 'json'): Buffer {
  if (format === 'json') {
    const timeUnixNano = `${unixMs}000000`;
    return Buffer.from(
      JSON.stringify({
        resourceMetrics: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
            scopeMetrics: [{ metrics: [{ name, gauge: { dataPoints: [{ timeUnixNano, asDouble: value }] } }] }],
          },
        ],
      }),
    );
  }
  const w = protobuf.Writer.create();
  tag(w, 1, LEN).fork(); // resource_metrics
  tag(w, 1, LEN).fork(); // resource
  tag(w, 1, LEN).fork(); // attributes: KeyValue
  tag(w, 1, LEN).string('service.name');
  tag(w, 2, LEN).fork();
  tag(w, 1, LEN).string(service);
  w.ldelim().ldelim().ldelim();
  tag(w, 2, LEN).fork(); // scope_metrics
  tag(w, 2, LEN).fork(); // metrics
  tag(w, 1, LEN).string(name);
  tag(w, 5, LEN).fork(); // gauge
  tag(w, 1, LEN).fork(); // data_points
  tag(w, 3, 1).fixed64(unixMs * 1_000_000); // exact to the millisecond: a double's error here is under 256 ns
  tag(w, 4, 1).double(value);
  w.ldelim().ldelim().ldelim().ldelim().ldelim();
  return Buffer.from(w.finish());
}
