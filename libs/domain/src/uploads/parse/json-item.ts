import { parseTimestamp } from '../../points/timestamp.ts';
import { kindOf, literalIsNonZero, VALUE_UNDERFLOW_REASON, valueProblem } from '../../points/value.ts';
import type { MetricNames } from './metric-names.ts';
import type { UploadOutput } from './output.ts';
import { snippet, withText } from './text.ts';

/** What the three JSON layouts share: one {timestamp, value} object read, and values below 5e-324 caught. */
type JsonObject = Record<string, unknown>;

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
export const has = (o: JsonObject, key: string): boolean => Object.hasOwn(o, key);

/**
 * JSON.parse turns a literal like 1e-400 into 0. When a document has a zero value, it is
 * parsed again with the source text of each number, and the objects whose `value` literal was
 * not zero are returned (they are errors, not points of value 0).
 */
export function parseWithUnderflows(text: string): { doc: unknown; underflows: ReadonlySet<object> } {
  const underflows = new Set<object>();
  const doc: unknown = JSON.parse(text, function (this: object, key: string, value: unknown, context?: { source?: string }) {
    if (key === 'value' && value === 0 && context?.source !== undefined && literalIsNonZero(context.source)) underflows.add(this);
    return value;
  });
  return { doc, underflows };
}

/**
 * A literal that is not zero yet parses to 0 lies below 5e-324: written out it needs a
 * negative exponent after a digit, or at least 323 zeros after the point. Text with neither
 * cannot hold one, and a zero in it is a real zero: no second parse is needed (a document of
 * telemetry often has zeros, and the second parse costs several times the first).
 */
const MAY_UNDERFLOW = /\d[eE]-|\.0{300}/;

export function mayUnderflow(text: string): boolean {
  return MAY_UNDERFLOW.test(text);
}

export function hasZeroValue(items: unknown): boolean {
  return Array.isArray(items) && items.some((item) => isObject(item) && item['value'] === 0);
}

/**
 * One {timestamp, value} object (with metric_name too when perRowName). `name` is the metric
 * for an object without its own. Reports every problem of the object, in field order.
 */
export function readJsonItem(
  out: UploadOutput,
  names: MetricNames,
  item: unknown,
  row: number,
  name: string | undefined,
  perRowName: boolean,
  underflow: boolean,
): void {
  const allowed = perRowName ? 'timestamp, value, metric_name' : 'timestamp, value';
  if (!isObject(item)) {
    out.error(row, 'row', `must be an object with ${allowed}, not ${kindOf(item)}`);
    return;
  }
  let ok = true;
  for (const key in item) {
    if (key !== 'timestamp' && key !== 'value' && !(perRowName && key === 'metric_name')) {
      out.error(row, 'row', `unknown field ${snippet(key)} (allowed: ${allowed})`);
      ok = false;
    }
  }

  let metricName = name;
  if (perRowName && has(item, 'metric_name')) {
    const own = item['metric_name'];
    const problem = typeof own !== 'string' ? `must be a string, not ${kindOf(own)}` : own === '' ? 'must not be empty' : names.rowProblem(own);
    if (problem !== null) {
      out.error(row, 'metric_name', problem);
      ok = false;
    } else {
      metricName = own as string;
    }
  } else if (metricName === undefined) {
    out.error(row, 'metric_name', 'required: this line has no metric_name and the upload gives none');
    ok = false;
  }

  let ts = -1;
  if (!has(item, 'timestamp')) {
    out.error(row, 'timestamp', 'required');
  } else {
    const text = item['timestamp'];
    if (typeof text !== 'string') {
      out.error(row, 'timestamp', `must be a string, not ${kindOf(text)}`);
    } else if (text === '') {
      out.error(row, 'timestamp', 'must not be empty');
    } else {
      const result = parseTimestamp(text);
      if (result.ok) ts = result.ms;
      else out.error(row, 'timestamp', withText(result.reason, text));
    }
  }

  let value: number | undefined;
  if (!has(item, 'value')) {
    out.error(row, 'value', 'required');
  } else {
    const v = item['value'];
    const problem = underflow ? VALUE_UNDERFLOW_REASON : valueProblem(v);
    if (problem === null) value = v as number;
    else out.error(row, 'value', problem);
  }

  if (ok && metricName !== undefined && ts >= 0 && value !== undefined) out.point(row, metricName, ts, value);
}
