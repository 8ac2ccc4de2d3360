import { malformed } from '../decoded.ts';
import type { ProtocolLimits } from '../limits.ts';
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
 * Reads OTLP/JSON (the protobuf JSON mapping as OTLP fixes it: lowerCamelCase field names,
 * 64-bit integers as decimal strings or numbers, enums as integers or their names, ids in hex)
 * into the model, within the budget. The snake_case names a proto3 JSON parser also accepts
 * are read too. Unknown fields are ignored, as OTLP asks. JSON.parse holds the whole body:
 * its cost is bounded by maxBytes, a few times over.
 */
export function readOtlpJson(bytes: Uint8Array, limits: ProtocolLimits): OtlpResourceMetrics[] {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    throw malformed(`the body is not valid JSON: ${(error as Error).message}`);
  }
  const budget = new ReadBudget(limits);
  const request = object(doc, 'the body');
  return list(request, 'resourceMetrics', 'resource_metrics').map((rm, i) => {
    budget.item();
    return readResourceMetrics(object(rm, `resourceMetrics[${i}]`), budget, limits);
  });
}

type Json = Record<string, unknown>;

function object(v: unknown, where: string): Json {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw malformed(`${where} must be an object`);
  return v as Json;
}

function get(o: Json, camel: string, snake?: string): unknown {
  const v = o[camel];
  return v === undefined && snake !== undefined ? o[snake] : v;
}

function list(o: Json, camel: string, snake?: string): unknown[] {
  const v = get(o, camel, snake);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw malformed(`${camel} must be an array`);
  return v;
}

function text(o: Json, camel: string, snake?: string): string {
  const v = get(o, camel, snake);
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw malformed(`${camel} must be a string`);
  return v;
}

/** A double: a JSON number, or "NaN", "Infinity", "-Infinity" as the JSON mapping writes them. */
function double(v: unknown, what: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  if (v === 'NaN') return Number.NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  if (typeof v === 'string' && /^-?[0-9.eE+-]+$/.test(v) && Number.isFinite(Number(v))) return Number(v);
  throw malformed(`${what} must be a number`);
}

/** A 64-bit integer: a decimal string or a JSON number. */
function int64Text(v: unknown, what: string): string {
  if (v === undefined || v === null) return '0';
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  if (typeof v === 'string' && /^-?[0-9]{1,20}$/.test(v)) return v;
  throw malformed(`${what} must be an integer (a decimal string)`);
}

function int64(v: unknown, what: string): number {
  return Number(int64Text(v, what));
}

/** Nanoseconds since the epoch as whole milliseconds, exact (the string keeps every digit). */
function nanosAsMillis(v: unknown, what: string): number {
  const t = int64Text(v, what);
  if (t.startsWith('-')) throw malformed(`${what} must not be negative`);
  return t.length > 6 ? Number(t.slice(0, t.length - 6)) : 0;
}

function enumValue(v: unknown, names: readonly string[], what: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string') {
    const i = names.indexOf(v);
    if (i >= 0) return i;
  }
  throw malformed(`${what} must be one of ${names.join(', ')} or its number`);
}

const TEMPORALITIES = ['AGGREGATION_TEMPORALITY_UNSPECIFIED', 'AGGREGATION_TEMPORALITY_DELTA', 'AGGREGATION_TEMPORALITY_CUMULATIVE'];

function anyValue(v: unknown, depth: number): AnyValue {
  if (depth > MAX_VALUE_DEPTH) throw malformed(`an attribute value nests arrays or maps more than ${MAX_VALUE_DEPTH} deep`);
  if (v === undefined || v === null) return null;
  const o = object(v, 'an attribute value');
  if (o.stringValue !== undefined || o.string_value !== undefined) return { string: text(o, 'stringValue', 'string_value') };
  const b = get(o, 'boolValue', 'bool_value');
  if (b !== undefined) return { bool: b === true };
  const i = get(o, 'intValue', 'int_value');
  if (i !== undefined) return { int: int64Text(i, 'intValue') };
  const d = get(o, 'doubleValue', 'double_value');
  if (d !== undefined) return { double: double(d, 'doubleValue') };
  const a = get(o, 'arrayValue', 'array_value');
  if (a !== undefined) return { array: list(object(a, 'arrayValue'), 'values').map((x) => anyValue(x, depth + 1)) };
  const m = get(o, 'kvlistValue', 'kvlist_value');
  if (m !== undefined) {
    return {
      map: list(object(m, 'kvlistValue'), 'values').map((kv) => {
        const e = object(kv, 'a kvlistValue entry');
        return [text(e, 'key'), anyValue(e.value, depth + 1)] as const;
      }),
    };
  }
  const bytes = get(o, 'bytesValue', 'bytes_value');
  if (typeof bytes === 'string') return { bytes: Uint8Array.from(Buffer.from(bytes, 'base64')) };
  return null;
}

function readResourceMetrics(rm: Json, budget: ReadBudget, limits: ProtocolLimits): OtlpResourceMetrics {
  const resource = { serviceName: '', serviceNamespace: '', serviceInstanceId: '' };
  const res = get(rm, 'resource');
  if (res !== undefined && res !== null) {
    for (const kv of list(object(res, 'resource'), 'attributes')) {
      const e = object(kv, 'a resource attribute');
      const key = text(e, 'key');
      if (key === 'service.name') resource.serviceName = anyValueText(anyValue(e.value, 0));
      else if (key === 'service.namespace') resource.serviceNamespace = anyValueText(anyValue(e.value, 0));
      else if (key === 'service.instance.id') resource.serviceInstanceId = anyValueText(anyValue(e.value, 0));
    }
  }
  const metrics: OtlpMetric[] = [];
  for (const sm of list(rm, 'scopeMetrics', 'scope_metrics')) {
    budget.item();
    for (const m of list(object(sm, 'scopeMetrics'), 'metrics')) {
      budget.item();
      metrics.push(readMetric(object(m, 'a metric'), budget, limits));
    }
  }
  return { ...resource, metrics };
}

function readMetric(m: Json, budget: ReadBudget, limits: ProtocolLimits): OtlpMetric {
  const name = text(m, 'name');
  const unit = text(m, 'unit');
  const points = (o: Json) => list(o, 'dataPoints', 'data_points').map((p) => object(p, 'a data point'));
  const temporality = (o: Json) => {
    const t = enumValue(get(o, 'aggregationTemporality', 'aggregation_temporality'), TEMPORALITIES, 'aggregationTemporality');
    const temporalityValue: Temporality = t === 1 || t === 2 ? t : 0;
    return temporalityValue;
  };
  let data: MetricData = { kind: 'none' };
  const gauge = get(m, 'gauge');
  const sum = get(m, 'sum');
  const histogram = get(m, 'histogram');
  const exponential = get(m, 'exponentialHistogram', 'exponential_histogram');
  const summary = get(m, 'summary');
  if (gauge != null) {
    data = { kind: 'gauge', points: points(object(gauge, 'gauge')).map((p) => numberPoint(p, budget, limits)) };
  } else if (sum != null) {
    const o = object(sum, 'sum');
    data = {
      kind: 'sum',
      monotonic: get(o, 'isMonotonic', 'is_monotonic') === true,
      temporality: temporality(o),
      points: points(o).map((p) => numberPoint(p, budget, limits)),
    };
  } else if (histogram != null) {
    const o = object(histogram, 'histogram');
    data = { kind: 'histogram', temporality: temporality(o), points: points(o).map((p) => histogramPoint(p, budget, limits)) };
  } else if (exponential != null) {
    const n = list(object(exponential, 'exponentialHistogram'), 'dataPoints', 'data_points').length;
    budget.points(n);
    data = { kind: 'exponential_histogram', points: n };
  } else if (summary != null) {
    data = { kind: 'summary', points: points(object(summary, 'summary')).map((p) => summaryPoint(p, budget, limits)) };
  }
  return { name, unit, data };
}

function pointHead(p: Json, limits: ProtocolLimits) {
  const raw = list(p, 'attributes');
  const attributes: Attribute[] = raw.slice(0, limits.maxLabels + 1).map((kv) => {
    const e = object(kv, 'an attribute');
    return [text(e, 'key'), anyValueText(anyValue(e.value, 0))] as const;
  });
  const flags = int64(get(p, 'flags'), 'flags');
  return {
    attributes,
    extraAttributes: raw.length - attributes.length,
    timeMs: nanosAsMillis(get(p, 'timeUnixNano', 'time_unix_nano'), 'timeUnixNano'),
    noValue: (flags & 1) === 1,
  };
}

function numberPoint(p: Json, budget: ReadBudget, limits: ProtocolLimits): NumberPoint {
  budget.points(1);
  const asDouble = get(p, 'asDouble', 'as_double');
  const value = asDouble !== undefined ? double(asDouble, 'asDouble') : int64(get(p, 'asInt', 'as_int'), 'asInt');
  return { ...pointHead(p, limits), value };
}

function histogramPoint(p: Json, budget: ReadBudget, limits: ProtocolLimits): HistogramPoint {
  const counts = list(p, 'bucketCounts', 'bucket_counts');
  const bounds = list(p, 'explicitBounds', 'explicit_bounds');
  budget.points(2 + counts.length + bounds.length);
  const sum = get(p, 'sum');
  return {
    ...pointHead(p, limits),
    count: int64(get(p, 'count'), 'count'),
    sum: sum === undefined || sum === null ? null : double(sum, 'sum'),
    bounds: bounds.map((b) => double(b, 'explicitBounds')),
    bucketCounts: counts.map((c) => int64(c, 'bucketCounts')),
  };
}

function summaryPoint(p: Json, budget: ReadBudget, limits: ProtocolLimits): SummaryPoint {
  const quantiles = list(p, 'quantileValues', 'quantile_values');
  budget.points(2 + quantiles.length);
  return {
    ...pointHead(p, limits),
    count: int64(get(p, 'count'), 'count'),
    sum: double(get(p, 'sum'), 'sum'),
    quantiles: quantiles.map((q) => {
      const o = object(q, 'a quantile value');
      return [double(get(o, 'quantile'), 'quantile'), double(get(o, 'value'), 'value')] as const;
    }),
  };
}
