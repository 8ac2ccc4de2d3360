import type { Label } from '@meridian/domain';
import { malformed, SeriesCollector, tooLarge, type DecodedPush, type DecodedSeries } from '../decoded.ts';
import { labelsFromAttributes } from '../label-names.ts';
import { compileLimits, type ProtocolLimits } from '../limits.ts';

/**
 * Influx line protocol (the body of v1 `/write` and v2 `/api/v2/write`, the same format):
 *
 *     measurement[,tag=value...] field=value[,field=value...] [timestamp]
 *
 * Each numeric field of a line is one point of the series `measurement_field{tag="value",...}`
 * (tag keys sanitised as label names). Floats (`1.5`, `1e3`), integers (`3i`) and unsigned
 * integers (`3u`) are stored as 64-bit floats (integers past 2^53 are rounded); booleans as 1
 * and 0 (as VictoriaMetrics stores them); string fields are dropped and counted. A line without
 * a timestamp takes the time the request was received. Timestamps finer than milliseconds are
 * rounded down to the millisecond. Blank lines and lines starting with `#` are skipped.
 *
 * A bad line is refused whole, with its number and reason, and the other lines are still
 * written: Influx's partial write.
 */

/** Timestamp precisions: v2's ns, us (or µs), ms, s, and v1's n, u, ms, s, m, h. */
export type InfluxPrecision = 'ns' | 'us' | 'ms' | 's' | 'm' | 'h';

const PRECISIONS: Readonly<Record<string, InfluxPrecision>> = {
  ns: 'ns',
  n: 'ns',
  us: 'us',
  u: 'us',
  µs: 'us',
  ms: 'ms',
  s: 's',
  m: 'm',
  h: 'h',
};

/** The precision a `precision` parameter names (null when it names none; absent means ns). */
export function parseInfluxPrecision(text: string | undefined): InfluxPrecision | null {
  if (text === undefined || text === '') return 'ns';
  return PRECISIONS[text] ?? null;
}

export type InfluxOptions = Partial<ProtocolLimits> & {
  /** The precision of the timestamps. @default 'ns' */
  readonly precision?: InfluxPrecision;
  /** When the request was received, epoch ms: the time of a line without a timestamp. */
  readonly receivedAtMs: number;
};

/** Digits to drop (finer than ms) or the factor to multiply by (coarser). */
const TO_MS: Readonly<Record<InfluxPrecision, { drop: number; factor: number }>> = {
  ns: { drop: 6, factor: 1 },
  us: { drop: 3, factor: 1 },
  ms: { drop: 0, factor: 1 },
  s: { drop: 0, factor: 1000 },
  m: { drop: 0, factor: 60_000 },
  h: { drop: 0, factor: 3_600_000 },
};

/** A timestamp in `precision` as epoch ms (rounded down), or null when it is not an integer of at most 19 digits. */
export function influxTimestampMs(text: string, precision: InfluxPrecision): number | null {
  const negative = text.charCodeAt(0) === 45;
  const digits = negative ? text.slice(1) : text;
  if (digits.length === 0 || digits.length > 19 || !/^[0-9]+$/.test(digits)) return null;
  const { drop, factor } = TO_MS[precision];
  if (drop === 0) return (negative ? -1 : 1) * Number(digits) * factor;
  const whole = digits.length > drop ? Number(digits.slice(0, digits.length - drop)) : 0;
  if (!negative) return whole;
  const rest = digits.slice(Math.max(0, digits.length - drop));
  return /[1-9]/.test(rest) ? -whole - 1 : -whole;
}

type ParsedField = { key: string; kind: 'number' | 'string'; value: number };
type ParsedLine = { measurement: string; seriesKey: string; tags: Array<[string, string]>; fields: ParsedField[]; timestamp: string | null };

class LineError extends Error {
  readonly fields: number;
  constructor(reason: string, fields = 1) {
    super(reason);
    this.fields = fields;
  }
}

/** Reads up to an unescaped char of `stops` from `i`, unescaping `\` before one of `escapable`. */
function readToken(line: string, i: number, stops: string, escapable: string): [string, number] {
  let out = '';
  let start = i;
  while (i < line.length) {
    const c = line[i]!;
    if (c === '\\' && i + 1 < line.length && escapable.includes(line[i + 1]!)) {
      out += line.slice(start, i);
      start = i + 1; // keep the escaped character
      i += 2;
      continue;
    }
    if (stops.includes(c)) break;
    i++;
  }
  return [out + line.slice(start, i), i];
}

const TRUE = new Set(['t', 'T', 'true', 'True', 'TRUE']);
const FALSE = new Set(['f', 'F', 'false', 'False', 'FALSE']);
const FLOAT = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const INTEGER = /^[+-]?[0-9]+$/;
const UNSIGNED = /^[0-9]+$/;

const INT64_MAX = '9223372036854775807';
const INT64_MIN_MAGNITUDE = '9223372036854775808';
const UINT64_MAX = '18446744073709551615';

/** Whether a run of decimal digits is at most `max` (digits too), without a float's rounding. */
function atMost(digits: string, max: string): boolean {
  const d = digits.replace(/^0+(?=.)/, '');
  return d.length < max.length || (d.length === max.length && d <= max);
}

function fieldValue(text: string, key: string): ParsedField {
  const last = text.charCodeAt(text.length - 1);
  if (last === 105 /* i */) {
    const digits = text.slice(0, -1);
    if (!INTEGER.test(digits)) throw new LineError(`field ${key}: invalid integer ${JSON.stringify(text)}`);
    const negative = digits.startsWith('-');
    if (!atMost(digits.replace(/^[+-]/, ''), negative ? INT64_MIN_MAGNITUDE : INT64_MAX))
      throw new LineError(`field ${key}: integer ${digits} is out of the range of a 64-bit integer`);
    return { key, kind: 'number', value: Number(digits) };
  }
  if (last === 117 /* u */) {
    const digits = text.slice(0, -1);
    if (!UNSIGNED.test(digits)) throw new LineError(`field ${key}: invalid unsigned integer ${JSON.stringify(text)}`);
    if (!atMost(digits, UINT64_MAX)) throw new LineError(`field ${key}: unsigned integer ${digits} is out of the range of a 64-bit unsigned integer`);
    return { key, kind: 'number', value: Number(digits) };
  }
  if (TRUE.has(text)) return { key, kind: 'number', value: 1 };
  if (FALSE.has(text)) return { key, kind: 'number', value: 0 };
  if (!FLOAT.test(text)) throw new LineError(`field ${key}: invalid value ${JSON.stringify(text.slice(0, 40))}`);
  const value = Number(text);
  if (!Number.isFinite(value)) throw new LineError(`field ${key}: ${text} is out of the range of a 64-bit float`);
  return { key, kind: 'number', value };
}

/** Parses one line (no line feed, not blank, not a comment). */
export function parseLine(line: string): ParsedLine {
  const [measurement, afterMeasurement] = readToken(line, 0, ', ', ', ');
  if (measurement === '') throw new LineError('missing measurement');
  let i = afterMeasurement;
  const tags: Array<[string, string]> = [];
  while (line[i] === ',') {
    const [key, eq] = readToken(line, i + 1, '=, ', ',= ');
    if (line[eq] !== '=') throw new LineError(`tag ${JSON.stringify(key)} has no value`);
    if (key === '') throw new LineError('a tag has an empty key');
    const [value, next] = readToken(line, eq + 1, ', ', ',= ');
    if (value === '') throw new LineError(`tag ${key} has an empty value`);
    tags.push([key, value]);
    i = next;
  }
  const seriesKey = line.slice(0, i);
  if (line[i] !== ' ') throw new LineError('missing fields');
  while (line[i] === ' ') i++;
  const fields: ParsedField[] = [];
  for (;;) {
    const [key, eq] = readToken(line, i, '= ,', ',= ');
    if (key === '') throw new LineError('a field has an empty key', Math.max(1, fields.length));
    if (line[eq] !== '=') throw new LineError(`field ${JSON.stringify(key)} has no value`, Math.max(1, fields.length));
    i = eq + 1;
    if (line[i] === '"') {
      // A string: to the closing quote, with \" and \\ escaped.
      let j = i + 1;
      while (j < line.length && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      if (j >= line.length) throw new LineError(`field ${key}: unterminated string`, Math.max(1, fields.length + 1));
      fields.push({ key, kind: 'string', value: 0 });
      i = j + 1;
    } else {
      let j = i;
      while (j < line.length && line[j] !== ',' && line[j] !== ' ') j++;
      if (j === i) throw new LineError(`field ${key} has no value`, fields.length + 1);
      try {
        fields.push(fieldValue(line.slice(i, j), key));
      } catch (error) {
        if (error instanceof LineError) throw new LineError(error.message, fields.length + 1);
        throw error;
      }
      i = j;
    }
    if (line[i] !== ',') break;
    i++;
  }
  while (line[i] === ' ') i++;
  let timestamp: string | null = null;
  if (i < line.length) {
    let j = i;
    while (j < line.length && line[j] !== ' ') j++;
    timestamp = line.slice(i, j);
    while (line[j] === ' ') j++;
    if (j < line.length) throw new LineError(`unexpected text after the timestamp: ${JSON.stringify(line.slice(j, j + 40))}`, fields.length);
  }
  return { measurement, seriesKey, tags, fields, timestamp };
}

/** A parsed line's numeric fields, one series each (its measurement, the field's key and its tags), at the line's time. */
function addFields(collector: SeriesCollector, known: Map<string, DecodedSeries | string>, parsed: ParsedLine, where: string, timestampMs: number): void {
  let labels: Label[] | null = null;
  for (const field of parsed.fields) {
    if (field.kind === 'string') {
      collector.stringField();
      continue;
    }
    const key = `${parsed.seriesKey} ${field.key}`;
    let series = known.get(key);
    if (series === undefined) {
      labels ??= labelsFromAttributes(parsed.tags);
      const opened = collector.open(`${parsed.measurement}_${field.key}`, labels);
      series = opened.ok ? opened.series : opened.reason;
      known.set(key, series);
    }
    if (typeof series === 'string') {
      collector.countSamples(1);
      collector.refusePoints(`${where} field ${field.key}`, series, 1);
      continue;
    }
    const reason = collector.add(series, timestampMs, field.value);
    if (reason !== null) collector.refusePoints(`${where} field ${field.key}`, reason, 1);
  }
}

/** Decodes a line protocol body (uncompressed bytes, UTF-8). */
export function decodeInfluxLines(bytes: Uint8Array, options: InfluxOptions): DecodedPush {
  const limits = compileLimits(stripOptions(options));
  if (bytes.length > limits.maxBytes) throw tooLarge(`the body is ${bytes.length} bytes, more than ${limits.maxBytes}`);
  const precision = options.precision ?? 'ns';
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw malformed('the body is not valid UTF-8');
  }
  const collector = new SeriesCollector(limits);
  // Lines of one series repeat its measurement and tags: the series is named once per field.
  const known = new Map<string, DecodedSeries | string>();
  let start = 0;
  for (let lineNumber = 1; start <= text.length; lineNumber++) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const next = end + 1;
    if (text.charCodeAt(end - 1) === 13) end--;
    const where = `line ${lineNumber}`;
    if (end - start > limits.maxLineLength) {
      collector.countSamples(1);
      collector.refusePoints(where, `the line is longer than ${limits.maxLineLength} characters`, 1);
      start = next;
      continue;
    }
    let first = start;
    while (first < end && (text.charCodeAt(first) === 32 || text.charCodeAt(first) === 9)) first++;
    if (first === end || text.charCodeAt(first) === 35 /* # */) {
      start = next;
      continue;
    }
    const line = text.slice(first, end);
    start = next;
    let parsed: ParsedLine;
    try {
      parsed = parseLine(line);
    } catch (error) {
      if (!(error instanceof LineError)) throw error;
      collector.countSamples(error.fields);
      collector.refusePoints(where, error.message, error.fields);
      continue;
    }
    let timestampMs = options.receivedAtMs;
    if (parsed.timestamp !== null) {
      const ms = influxTimestampMs(parsed.timestamp, precision);
      if (ms === null) {
        collector.countSamples(parsed.fields.length);
        collector.refusePoints(
          where,
          `invalid timestamp ${JSON.stringify(parsed.timestamp.slice(0, 40))}: an integer of ${precision} is expected`,
          parsed.fields.length,
        );
        continue;
      }
      timestampMs = ms;
    }
    addFields(collector, known, parsed, where, timestampMs);
  }
  return collector.result();
}

function stripOptions(options: InfluxOptions): Partial<ProtocolLimits> {
  const { precision: _p, receivedAtMs: _r, ...limits } = options;
  return limits;
}

/**
 * What an Influx write answers when lines were refused (400, the good lines written): the
 * first bad line's number and reason and how many points were refused in all, as Influx's
 * own "partial write" message says it. Null when nothing was refused.
 */
export function influxPartialWriteMessage(push: DecodedPush): string | null {
  const first = push.rejected[0];
  if (first === undefined) return null;
  return `partial write: ${first.where}: ${first.reason} (${push.rejectedPoints} points refused, ${push.samples} written)`;
}
