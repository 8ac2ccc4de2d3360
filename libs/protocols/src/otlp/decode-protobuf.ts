import { malformed } from '../decoded.ts';
import type { ProtocolLimits } from '../limits.ts';
import {
  decodingProtobuf,
  eachMessage,
  expectEnd,
  fieldEnd,
  readerOf,
  readNanosAsMillis,
  readSfixed64,
  skipField,
  WIRE_BYTES,
  WIRE_FIXED64,
  WIRE_VARINT,
  type Reader,
} from '../protobuf.ts';
import {
  ReadBudget,
  type Attribute,
  type HistogramPoint,
  type MetricData,
  type NumberPoint,
  type OtlpMetric,
  type OtlpResourceMetrics,
  type SummaryPoint,
  type Temporality,
} from './model.ts';
import { anyValueText, MAX_VALUE_DEPTH, type AnyValue } from './values.ts';

/**
 * Reads an `ExportMetricsServiceRequest` (metrics.proto) off the wire into the model, within the
 * budget: the messages are walked field by field, and a sub-message that the wire puts before
 * what it depends on (scope metrics before their resource, data before a metric's name) is
 * kept as a view of the body and read once its parent is complete.
 */
export function readOtlpProtobuf(bytes: Uint8Array, limits: ProtocolLimits): OtlpResourceMetrics[] {
  const budget = new ReadBudget(limits);
  return decodingProtobuf('OTLP metrics request', () => {
    const r = readerOf(bytes);
    const out: OtlpResourceMetrics[] = [];
    eachMessage(r, r.len, 1, (end) => {
      budget.item();
      out.push(readResourceMetrics(r, end, budget, limits));
      expectEnd(r, end);
    });
    return out;
  });
}

/** Runs `read` over a sub-message and checks that it stopped at its end. */
function within<T>(r: Reader, limit: number, read: (end: number) => T): T {
  const end = fieldEnd(r, limit);
  const value = read(end);
  expectEnd(r, end);
  return value;
}

function readResourceMetrics(r: Reader, end: number, budget: ReadBudget, limits: ProtocolLimits): OtlpResourceMetrics {
  const resource = { serviceName: '', serviceNamespace: '', serviceInstanceId: '' };
  const scopes: Array<[number, number]> = [];
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | WIRE_BYTES)) {
      within(r, end, (resEnd) => {
        while (r.pos < resEnd) {
          const t = r.uint32();
          if (t !== ((1 << 3) | WIRE_BYTES)) {
            skipField(r, t & 7);
            continue;
          }
          // Only the three service attributes are read; the others are skipped unread.
          within(r, resEnd, (kvEnd) => {
            let key = '';
            let value = '';
            while (r.pos < kvEnd) {
              const kt = r.uint32();
              if (kt === ((1 << 3) | WIRE_BYTES)) key = r.string();
              else if (kt === ((2 << 3) | WIRE_BYTES) && (key === 'service.name' || key === 'service.namespace' || key === 'service.instance.id')) {
                value = within(r, kvEnd, (vEnd) => anyValue(r, vEnd, 0));
              } else skipField(r, kt & 7);
            }
            if (key === 'service.name') resource.serviceName = value;
            else if (key === 'service.namespace') resource.serviceNamespace = value;
            else if (key === 'service.instance.id') resource.serviceInstanceId = value;
          });
        }
      });
    } else if (tag === ((2 << 3) | WIRE_BYTES)) {
      budget.item();
      const scopeEnd = fieldEnd(r, end);
      scopes.push([r.pos, scopeEnd]);
      r.pos = scopeEnd;
    } else skipField(r, tag & 7);
  }
  const metrics: OtlpMetric[] = [];
  for (const [start, scopeEnd] of scopes) {
    r.pos = start;
    eachMessage(r, scopeEnd, 2, (metricEnd) => {
      budget.item();
      metrics.push(readMetric(r, metricEnd, budget, limits));
      expectEnd(r, metricEnd);
    });
  }
  r.pos = end;
  return { ...resource, metrics };
}

function readMetric(r: Reader, end: number, budget: ReadBudget, limits: ProtocolLimits): OtlpMetric {
  let name = '';
  let unit = '';
  let data: MetricData = { kind: 'none' };
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if (tag === ((1 << 3) | WIRE_BYTES)) name = r.string();
    else if (tag === ((3 << 3) | WIRE_BYTES)) unit = r.string();
    else if ((tag & 7) === WIRE_BYTES && (field === 5 || field === 7 || field === 9 || field === 10 || field === 11)) {
      data = within(r, end, (dataEnd) => readData(r, field, dataEnd, budget, limits));
    } else skipField(r, tag & 7);
  }
  return { name, unit, data };
}

function readData(r: Reader, field: number, end: number, budget: ReadBudget, limits: ProtocolLimits): MetricData {
  let temporality: Temporality = 0;
  let monotonic = false;
  const points: Array<NumberPoint | HistogramPoint | SummaryPoint> = [];
  let exponential = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | WIRE_BYTES)) {
      if (field === 10) {
        budget.points(1);
        exponential++;
        skipField(r, WIRE_BYTES);
        continue;
      }
      points.push(
        within(r, end, (pointEnd) =>
          field === 9
            ? readHistogramPoint(r, pointEnd, budget, limits)
            : field === 11
              ? readSummaryPoint(r, pointEnd, budget, limits)
              : readNumberPoint(r, pointEnd, budget, limits),
        ),
      );
    } else if (tag === ((2 << 3) | WIRE_VARINT) && field !== 5 && field !== 11) {
      const t = r.uint32();
      temporality = t === 1 || t === 2 ? t : 0;
    } else if (tag === ((3 << 3) | WIRE_VARINT) && field === 7) {
      monotonic = r.bool();
    } else skipField(r, tag & 7);
  }
  switch (field) {
    case 5:
      return { kind: 'gauge', points: points as NumberPoint[] };
    case 7:
      return { kind: 'sum', monotonic, temporality, points: points as NumberPoint[] };
    case 9:
      return { kind: 'histogram', temporality, points: points as HistogramPoint[] };
    case 10:
      return { kind: 'exponential_histogram', points: exponential };
    default:
      return { kind: 'summary', points: points as SummaryPoint[] };
  }
}

/** Reads one attribute (a KeyValue) into `into`, or counts it once `into` holds maxLabels + 1. */
function readAttribute(r: Reader, end: number, into: Attribute[], maxLabels: number): boolean {
  if (into.length > maxLabels) {
    r.pos = end;
    return false;
  }
  let key = '';
  let value = '';
  while (r.pos < end) {
    const t = r.uint32();
    if (t === ((1 << 3) | WIRE_BYTES)) key = r.string();
    else if (t === ((2 << 3) | WIRE_BYTES)) value = within(r, end, (vEnd) => anyValue(r, vEnd, 0));
    else skipField(r, t & 7);
  }
  into.push([key, value]);
  return true;
}

/** The fields every data point has: attributes (at `attributesField`), time, flags. */
type PointHead = { attributes: Attribute[]; extraAttributes: number; timeMs: number; noValue: boolean };

function readPointHead(r: Reader, tag: number, end: number, head: PointHead, attributesField: number, flagsField: number, maxLabels: number): boolean {
  if (tag === ((attributesField << 3) | WIRE_BYTES)) {
    within(r, end, (kvEnd) => {
      if (!readAttribute(r, kvEnd, head.attributes, maxLabels)) head.extraAttributes++;
    });
  } else if (tag === ((3 << 3) | WIRE_FIXED64)) {
    head.timeMs = readNanosAsMillis(r);
  } else if (tag === ((flagsField << 3) | WIRE_VARINT)) {
    head.noValue = (r.uint32() & 1) === 1;
  } else return false;
  return true;
}

const newHead = (): PointHead => ({ attributes: [], extraAttributes: 0, timeMs: 0, noValue: false });

function readNumberPoint(r: Reader, end: number, budget: ReadBudget, limits: ProtocolLimits): NumberPoint {
  budget.points(1);
  const head = newHead();
  let value = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    if (readPointHead(r, tag, end, head, 7, 8, limits.maxLabels)) continue;
    if (tag === ((4 << 3) | WIRE_FIXED64)) value = r.double();
    else if (tag === ((6 << 3) | WIRE_FIXED64)) value = readSfixed64(r);
    else skipField(r, tag & 7);
  }
  return { ...head, value };
}

/** A packed or unpacked repeated fixed64 or double, each element counted as a sample. */
function readRepeated64(r: Reader, tag: number, end: number, into: number[], budget: ReadBudget, asDouble: boolean): void {
  const read = () => (asDouble ? r.double() : readUint64(r));
  if ((tag & 7) === WIRE_BYTES) {
    within(r, end, (listEnd) => {
      if ((listEnd - r.pos) % 8 !== 0) throw malformed('a packed 64-bit list is not a whole number of elements');
      budget.points((listEnd - r.pos) / 8);
      while (r.pos < listEnd) into.push(read());
    });
  } else if ((tag & 7) === WIRE_FIXED64) {
    budget.points(1);
    into.push(read());
  } else skipField(r, tag & 7);
}

/** A fixed64 count as a number (exact below 2^53). */
function readUint64(r: Reader): number {
  const v = r.fixed64() as unknown as { toNumber(): number } | number;
  return typeof v === 'number' ? v : v.toNumber();
}

function readHistogramPoint(r: Reader, end: number, budget: ReadBudget, limits: ProtocolLimits): HistogramPoint {
  budget.points(2); // count and sum; each bound and bucket count adds one
  const head = newHead();
  let count = 0;
  let sum: number | null = null;
  const bounds: number[] = [];
  const bucketCounts: number[] = [];
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if (readPointHead(r, tag, end, head, 9, 10, limits.maxLabels)) continue;
    if (tag === ((4 << 3) | WIRE_FIXED64)) count = readUint64(r);
    else if (tag === ((5 << 3) | WIRE_FIXED64)) sum = r.double();
    else if (field === 6) readRepeated64(r, tag, end, bucketCounts, budget, false);
    else if (field === 7) readRepeated64(r, tag, end, bounds, budget, true);
    else skipField(r, tag & 7);
  }
  return { ...head, count, sum, bounds, bucketCounts };
}

function readSummaryPoint(r: Reader, end: number, budget: ReadBudget, limits: ProtocolLimits): SummaryPoint {
  budget.points(2);
  const head = newHead();
  let count = 0;
  let sum = 0;
  const quantiles: Array<readonly [number, number]> = [];
  while (r.pos < end) {
    const tag = r.uint32();
    if (readPointHead(r, tag, end, head, 7, 8, limits.maxLabels)) continue;
    if (tag === ((4 << 3) | WIRE_FIXED64)) count = readUint64(r);
    else if (tag === ((5 << 3) | WIRE_FIXED64)) sum = r.double();
    else if (tag === ((6 << 3) | WIRE_BYTES)) {
      budget.points(1);
      quantiles.push(
        within(r, end, (qEnd) => {
          let quantile = 0;
          let value = 0;
          while (r.pos < qEnd) {
            const t = r.uint32();
            if (t === ((1 << 3) | WIRE_FIXED64)) quantile = r.double();
            else if (t === ((2 << 3) | WIRE_FIXED64)) value = r.double();
            else skipField(r, t & 7);
          }
          return [quantile, value] as const;
        }),
      );
    } else skipField(r, tag & 7);
  }
  return { ...head, count, sum, quantiles };
}

/** An AnyValue message as label text; arrays and maps are read to a bounded depth. */
function anyValue(r: Reader, end: number, depth: number): string {
  return anyValueText(readAny(r, end, depth));
}

function readAny(r: Reader, end: number, depth: number): AnyValue {
  if (depth > MAX_VALUE_DEPTH) throw malformed(`an attribute value nests arrays or maps more than ${MAX_VALUE_DEPTH} deep`);
  let value: AnyValue = null;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag) {
      case (1 << 3) | WIRE_BYTES:
        value = { string: r.string() };
        break;
      case (2 << 3) | WIRE_VARINT:
        value = { bool: r.bool() };
        break;
      case (3 << 3) | WIRE_VARINT:
        value = { int: String(r.int64()) };
        break;
      case (4 << 3) | WIRE_FIXED64:
        value = { double: r.double() };
        break;
      case (5 << 3) | WIRE_BYTES:
        value = { array: within(r, end, (listEnd) => readList(r, listEnd, depth, false) as AnyValue[]) };
        break;
      case (6 << 3) | WIRE_BYTES:
        value = { map: within(r, end, (listEnd) => readList(r, listEnd, depth, true) as Array<[string, AnyValue]>) };
        break;
      case (7 << 3) | WIRE_BYTES:
        value = { bytes: r.bytes() };
        break;
      default:
        skipField(r, tag & 7);
    }
  }
  return value;
}

/** The values of an ArrayValue, or the entries of a KeyValueList (both repeated field 1). */
function readList(r: Reader, end: number, depth: number, isMap: boolean): AnyValue[] | Array<[string, AnyValue]> {
  const items: AnyValue[] = [];
  const entries: Array<[string, AnyValue]> = [];
  while (r.pos < end) {
    const t = r.uint32();
    if (t !== ((1 << 3) | WIRE_BYTES)) {
      skipField(r, t & 7);
      continue;
    }
    within(r, end, (itemEnd) => {
      if (!isMap) {
        items.push(readAny(r, itemEnd, depth + 1));
        return;
      }
      let key = '';
      let v: AnyValue = null;
      while (r.pos < itemEnd) {
        const kt = r.uint32();
        if (kt === ((1 << 3) | WIRE_BYTES)) key = r.string();
        else if (kt === ((2 << 3) | WIRE_BYTES)) v = within(r, itemEnd, (vEnd) => readAny(r, vEnd, depth + 1));
        else skipField(r, kt & 7);
      }
      entries.push([key, v]);
    });
  }
  return isMap ? entries : items;
}
