import protobuf from 'protobufjs/minimal.js';

/**
 * An OTLP ExportMetricsServiceRequest as protobuf, written field by field (libs/protocols/src/otlp/
 * metrics.proto): for the metric kinds and units the recorded senders do not send (a summary, a
 * non-monotonic sum, a delta sum, integer points, units that become words).
 */
export type OtlpAttributes = Readonly<Record<string, string>>;
type Common = { readonly attributes?: OtlpAttributes; readonly timeMs: number };
export type OtlpNumberPoint = Common & { readonly value: number; readonly asInt?: boolean };
export type OtlpHistogramPoint = Common & {
  readonly count: number;
  readonly sum: number;
  readonly bounds: readonly number[];
  readonly counts: readonly number[];
};
export type OtlpSummaryPoint = Common & { readonly count: number; readonly sum: number; readonly quantiles: ReadonlyArray<readonly [number, number]> };
export type OtlpTemporality = 'delta' | 'cumulative';
export type OtlpMetricSpec = { readonly name: string; readonly unit?: string } & (
  | { readonly kind: 'gauge'; readonly points: readonly OtlpNumberPoint[] }
  | { readonly kind: 'sum'; readonly monotonic: boolean; readonly temporality: OtlpTemporality; readonly points: readonly OtlpNumberPoint[] }
  | { readonly kind: 'histogram'; readonly temporality: OtlpTemporality; readonly points: readonly OtlpHistogramPoint[] }
  | { readonly kind: 'summary'; readonly points: readonly OtlpSummaryPoint[] }
);
export type OtlpRequestSpec = {
  readonly resource: OtlpAttributes;
  readonly scope?: { readonly name: string; readonly version: string };
  readonly metrics: readonly OtlpMetricSpec[];
};

const LEN = 2;
const I64 = 1;
const VARINT = 0;
const TEMPORALITY = { delta: 1, cumulative: 2 } as const;
const tag = (w: protobuf.Writer, field: number, wire: number) => w.uint32((field << 3) | wire);
/** Nanoseconds as fixed64, exact for whole milliseconds (a double's error here is under 256 ns). */
const nanos = (w: protobuf.Writer, field: number, ms: number) => tag(w, field, I64).fixed64(ms * 1_000_000);

function attributes(w: protobuf.Writer, field: number, attrs: OtlpAttributes = {}): void {
  for (const [key, value] of Object.entries(attrs)) {
    tag(w, field, LEN).fork();
    tag(w, 1, LEN).string(key);
    tag(w, 2, LEN).fork();
    tag(w, 1, LEN).string(value);
    w.ldelim().ldelim();
  }
}

function numberPoint(w: protobuf.Writer, p: OtlpNumberPoint): void {
  attributes(w, 7, p.attributes);
  nanos(w, 3, p.timeMs);
  if (p.asInt) tag(w, 6, I64).sfixed64(p.value);
  else tag(w, 4, I64).double(p.value);
}

function histogramPoint(w: protobuf.Writer, p: OtlpHistogramPoint): void {
  attributes(w, 9, p.attributes);
  nanos(w, 3, p.timeMs);
  tag(w, 4, I64).fixed64(p.count);
  tag(w, 5, I64).double(p.sum);
  tag(w, 6, LEN).fork();
  for (const c of p.counts) w.fixed64(c);
  w.ldelim();
  tag(w, 7, LEN).fork();
  for (const b of p.bounds) w.double(b);
  w.ldelim();
}

function summaryPoint(w: protobuf.Writer, p: OtlpSummaryPoint): void {
  attributes(w, 7, p.attributes);
  nanos(w, 3, p.timeMs);
  tag(w, 4, I64).fixed64(p.count);
  tag(w, 5, I64).double(p.sum);
  for (const [q, v] of p.quantiles) {
    tag(w, 6, LEN).fork();
    tag(w, 1, I64).double(q);
    tag(w, 2, I64).double(v);
    w.ldelim();
  }
}

/** The data of a metric: its field in Metric, then its points (field 1 of each kind) and the kind's own fields. */
function metricData(w: protobuf.Writer, m: OtlpMetricSpec): void {
  const points = <P>(list: readonly P[], write: (w: protobuf.Writer, p: P) => void) => {
    for (const p of list) {
      tag(w, 1, LEN).fork();
      write(w, p);
      w.ldelim();
    }
  };
  switch (m.kind) {
    case 'gauge':
      tag(w, 5, LEN).fork();
      points(m.points, numberPoint);
      break;
    case 'sum':
      tag(w, 7, LEN).fork();
      points(m.points, numberPoint);
      tag(w, 2, VARINT).uint32(TEMPORALITY[m.temporality]);
      tag(w, 3, VARINT).bool(m.monotonic);
      break;
    case 'histogram':
      tag(w, 9, LEN).fork();
      points(m.points, histogramPoint);
      tag(w, 2, VARINT).uint32(TEMPORALITY[m.temporality]);
      break;
    case 'summary':
      tag(w, 11, LEN).fork();
      points(m.points, summaryPoint);
      break;
  }
  w.ldelim();
}

export function otlpRequestBody(spec: OtlpRequestSpec): Buffer {
  const w = protobuf.Writer.create();
  tag(w, 1, LEN).fork(); // resource_metrics
  tag(w, 1, LEN).fork(); // resource
  attributes(w, 1, spec.resource);
  w.ldelim();
  tag(w, 2, LEN).fork(); // scope_metrics
  if (spec.scope) {
    tag(w, 1, LEN).fork();
    tag(w, 1, LEN).string(spec.scope.name);
    tag(w, 2, LEN).string(spec.scope.version);
    w.ldelim();
  }
  for (const m of spec.metrics) {
    tag(w, 2, LEN).fork();
    tag(w, 1, LEN).string(m.name);
    if (m.unit !== undefined) tag(w, 3, LEN).string(m.unit);
    metricData(w, m);
    w.ldelim();
  }
  w.ldelim().ldelim();
  return Buffer.from(w.finish());
}
