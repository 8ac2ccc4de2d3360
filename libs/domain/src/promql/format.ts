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
