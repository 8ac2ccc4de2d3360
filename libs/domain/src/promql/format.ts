import { labelsObject } from '../series/labels.ts';
import type { QueryResult } from './eval.ts';

/**
 * A sample value as Prometheus writes it (Go's strconv.FormatFloat(v, 'f', -1, 64)): the
 * shortest digits that read back as the same float, never an exponent; NaN, +Inf, -Inf.
 */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  if (Object.is(v, -0)) return '-0';
  const s = String(v);
  const e = s.indexOf('e');
  if (e < 0) return s;
  const negative = s.startsWith('-');
  const mantissa = s.slice(negative ? 1 : 0, e);
  const exponent = Number(s.slice(e + 1));
  const [int, frac = ''] = mantissa.split('.');
  const digits = `${int}${frac}`;
  const point = int!.length + exponent;
  let out: string;
  if (point <= 0) out = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) out = `${digits}${'0'.repeat(point - digits.length)}`;
  else out = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return negative ? `-${out}` : out;
}

/** A timestamp as Prometheus writes it: seconds, with the milliseconds as decimals. */
export function formatTime(ms: number): number {
  return ms / 1000;
}

/** The `data` of a query answer in Prometheus' JSON. */
export function queryData(r: QueryResult): { resultType: string; result: unknown } {
  switch (r.resultType) {
    case 'scalar':
      return { resultType: 'scalar', result: [formatTime(r.t), formatValue(r.v)] };
    case 'vector':
      return { resultType: 'vector', result: r.samples.map((s) => ({ metric: labelsObject(s.labels), value: [formatTime(r.t), formatValue(s.v)] })) };
    case 'matrix':
      return {
        resultType: 'matrix',
        result: r.series.map((s) => ({ metric: labelsObject(s.labels), values: s.points.map(([t, v]) => [formatTime(t), formatValue(v)]) })),
      };
    default: {
      const never: never = r;
      return never;
    }
  }
}

/**
 * The same `data` as JSON text, written directly: a range query over 1,000 series at 1 m steps
 * answers 1.44 million points, and building an array and a string per point for JSON.stringify
 * to walk was a large part of its time. Equal to JSON.stringify(queryData(r)).
 */
export function queryDataJson(r: QueryResult): string {
  return [...queryDataJsonParts(r)].join('');
}

/**
 * queryDataJson in parts, a series each, for an answer sent as it is written: the answer of a
 * large range query (50 MB for 1.44 million points) is never one string. A series the store
 * reduced (RegularSteps) is written from its typed arrays, without a point each; every step's
 * time is written once.
 */
export function* queryDataJsonParts(r: QueryResult): Generator<string> {
  if (r.resultType !== 'matrix') {
    yield JSON.stringify(queryData(r));
    return;
  }
  yield '{"resultType":"matrix","result":[';
  const times = new Map<number, string>();
  const timeText = (t: number) => {
    let text = times.get(t);
    if (text === undefined) times.set(t, (text = `[${formatTime(t)},"`));
    return text;
  };
  let first = true;
  for (const s of r.series) {
    // Times are numbers and values digits, '.', '-', NaN or ±Inf: nothing to escape.
    const values: string[] = [];
    if (s.steps) {
      const { startMs, stepMs, values: v } = s.steps;
      for (let k = 0; k < v.present.length; k++) if (v.present[k] === 1) values.push(`${timeText(startMs + k * stepMs)}${formatValue(v.values[k]!)}"]`);
    } else {
      for (const [t, v] of s.points) values.push(`${timeText(t)}${formatValue(v)}"]`);
    }
    yield `${first ? '' : ','}{"metric":${JSON.stringify(labelsObject(s.labels))},"values":[${values.join(',')}]}`;
    first = false;
  }
  yield ']}';
}
