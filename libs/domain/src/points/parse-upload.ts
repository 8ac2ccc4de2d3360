/**
 * Parses an uploaded metrics document (already decompressed bytes) into points and
 * row-numbered errors. Every invalid row is reported; nothing is dropped or changed silently.
 * Points are yielded even when other rows are invalid: the caller decides (all or nothing).
 *
 * Layouts, told apart by the content (after a UTF-8 BOM and leading whitespace):
 *   `[`  json-array       [{timestamp, value}, ...]                  row = 1-based index
 *   `{`  ndjson           one {timestamp, value, metric_name?} per line   row = physical line
 *        json-body        {metric_name?, values: [{timestamp, value}]}   row = 1-based index
 *   else csv-with-header `timestamp,value` header line, then rows      row = physical line
 *        download-csv    `metric_name,timestamp,metric_numeric_value,updated_at` header
 *        csv             no header: every line is `timestamp,value`
 * CSV and NDJSON are streamed with bounded memory (lines and columns capped); the two JSON
 * documents are buffered up to maxJsonDocumentLength characters and parsed with JSON.parse,
 * after a scan that refuses nesting deeper than MAX_JSON_NESTING as it arrives.
 */
import { CsvReader, DEFAULT_MAX_COLUMNS, lineTooLongProblem, type CsvRecord } from './csv-reader.ts';
import { DEFAULT_MAX_LINE_LENGTH, LineReader } from './line-reader.ts';
import { JsonNestingMeter } from './json-nesting.ts';
import { metricNameProblem } from './metric-name.ts';
import { parseTimestamp, TimestampReader } from './timestamp.ts';
import { Utf8Decoder } from './utf8.ts';
import { isBlankCode, kindOf, literalIsNonZero, parseValueText, plainDecimalAt, trimBlanks, VALUE_UNDERFLOW_REASON, valueProblem } from './value.ts';

export type UploadLayout = 'csv' | 'csv-with-header' | 'download-csv' | 'json-body' | 'json-array' | 'ndjson';

/**
 * `row`: for CSV and NDJSON the physical line (a header is line 1, blank lines count); for the
 * JSON documents the 1-based index in the values array; 0 for the document as a whole; -1 for
 * the final "N more errors not shown". `column`: timestamp, value, metric_name, updated_at,
 * or row for structural problems.
 */
export type UploadItem =
  | { kind: 'point'; row: number; metric_name: string; ts: number; value: number }
  | { kind: 'error'; row: number; column: string; reason: string }
  | { kind: 'layout'; layout: UploadLayout };

export type ParseUploadOptions = {
  /** The metric of layouts without a per-row name; when given, per-row and body names must equal it. */
  metricName?: string;
  /** Errors yielded before the rest are only counted (default DEFAULT_MAX_UPLOAD_ERRORS). */
  maxErrors?: number;
  /** Longest CSV record or NDJSON line, in characters; a longer one is a row error (default 65536). */
  maxLineLength?: number;
  /** Most fields of a CSV record; a wider one is a row error (default 64). */
  maxColumns?: number;
  /** Longest json-body or json-array document, in characters; a longer one stops the upload (default 64 Mi). */
  maxJsonDocumentLength?: number;
};

export const DEFAULT_MAX_UPLOAD_ERRORS = 100;
export const DEFAULT_MAX_JSON_DOCUMENT_LENGTH = 64 * 1024 * 1024;
/** Deepest nesting of a JSON document: the layouts need 2 ({values: [{...}]}); deeper is never valid. */
export const MAX_JSON_NESTING = 64;

const INVALID_UTF8_REASON = 'invalid UTF-8: the upload must be UTF-8 encoded';
const TRUNCATED_UTF8_REASON = 'invalid UTF-8: the upload ends inside a multi-byte character';
const CSV_HEADER = ['timestamp', 'value'];
const DOWNLOAD_CSV_HEADER = ['metric_name', 'timestamp', 'metric_numeric_value', 'updated_at'];
const SNIPPET_LENGTH = 64;
const NO_HOLDERS: ReadonlySet<object> = new Set();

type Mode = 'detect' | 'csv' | 'ndjson' | 'json';
type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: JsonObject, key: string): boolean => Object.hasOwn(o, key);
const isJsonSpace = (c: number): boolean => c === 32 || c === 10 || c === 13 || c === 9;

function isJsonBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!isJsonSpace(text.charCodeAt(i))) return false;
  return true;
}

/** The user's text in a message: JSON-quoted (control characters escaped), shortened. */
function snippet(text: string): string {
  return JSON.stringify(text.length > SNIPPET_LENGTH ? `${text.slice(0, SNIPPET_LENGTH)}…` : text);
}

const withText = (reason: string, text: string): string => (text === '' ? reason : `${reason}; got ${snippet(text)}`);

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function positiveOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

function isHeader(record: CsvRecord, names: readonly string[]): boolean {
  return names.every((name, i) => trimBlanks(record.field(i)).toLowerCase() === name);
}

/** A first line that is a whole {timestamp, value} object (not a body with values) starts NDJSON. */
function isNdjsonLine(line: string): boolean {
  try {
    const o: unknown = JSON.parse(line);
    return isObject(o) && has(o, 'timestamp') && has(o, 'value') && !has(o, 'values');
  } catch {
    return false;
  }
}

/**
 * JSON.parse turns a literal like 1e-400 into 0. When a document has a zero value, it is
 * parsed again with the source text of each number, and the objects whose `value` literal was
 * not zero are returned (they are errors, not points of value 0).
 */
function parseWithUnderflows(text: string): { doc: unknown; underflows: ReadonlySet<object> } {
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

function mayUnderflow(text: string): boolean {
  return MAY_UNDERFLOW.test(text);
}

function hasZeroValue(items: unknown): boolean {
  return Array.isArray(items) && items.some((item) => isObject(item) && item['value'] === 0);
}

class UploadParser {
  stopped = false;
  private out: UploadItem[] = [];
  private mode: Mode = 'detect';
  private layout: UploadLayout | null = null;
  private readonly optionName: string | undefined;
  private readonly maxErrors: number;
  private readonly maxLineLength: number;
  private readonly maxColumns: number;
  private readonly maxJsonDocumentLength: number;
  private errorCount = 0;
  private suppressed = 0;
  // detection
  private head = '';
  private headScan = 0;
  private firstAt = -1;
  // per layout
  private csv: CsvReader | null = null;
  private lines: LineReader | null = null;
  private jsonParts: string[] = [];
  private jsonLength = 0;
  private jsonNesting: JsonNestingMeter | null = null;
  // the last per-row metric name and its problem, as rows of one metric usually follow each other
  private lastName: string | null = null;
  private lastNameProblem: string | null = null;
  // CSV timestamps, with the last date's day number; updated_at has its own (its dates differ from the timestamps')
  private readonly timestamps = new TimestampReader();
  private readonly updatedAts = new TimestampReader();

  constructor(options: ParseUploadOptions) {
    const maxErrors = options.maxErrors ?? DEFAULT_MAX_UPLOAD_ERRORS;
    if (!Number.isInteger(maxErrors) || maxErrors < 0) throw new RangeError(`maxErrors must be a non-negative integer, got ${maxErrors}`);
    this.maxErrors = maxErrors;
    this.maxLineLength = positiveOption('maxLineLength', options.maxLineLength, DEFAULT_MAX_LINE_LENGTH);
    this.maxColumns = positiveOption('maxColumns', options.maxColumns, DEFAULT_MAX_COLUMNS);
    this.maxJsonDocumentLength = positiveOption('maxJsonDocumentLength', options.maxJsonDocumentLength, DEFAULT_MAX_JSON_DOCUMENT_LENGTH);
    this.optionName = options.metricName;
    if (this.optionName !== undefined) {
      const problem = metricNameProblem(this.optionName);
      if (problem !== null) this.stop(0, 'metric_name', withText(problem, String(this.optionName)));
    }
  }

  take(): UploadItem[] {
    const items = this.out;
    this.out = [];
    return items;
  }

  push(text: string): void {
    if (this.stopped) return;
    switch (this.mode) {
      case 'detect':
        this.head += text;
        this.detect(false);
        return;
      case 'csv':
        this.csv!.feed(text);
        return;
      case 'ndjson':
        this.lines!.feed(text);
        return;
      case 'json':
        this.jsonText(text);
        return;
    }
  }

  /** Holds a part of a JSON document, within the document's length and nesting bounds. */
  private jsonText(text: string): void {
    this.jsonLength += text.length;
    if (this.jsonLength > this.maxJsonDocumentLength) {
      this.stop(0, 'row', `the ${this.layout} document is longer than ${this.maxJsonDocumentLength} characters; send larger sets as CSV or NDJSON, which are read as they stream`);
      return;
    }
    if (!this.jsonNesting!.feed(text)) {
      this.stop(0, 'row', `invalid JSON: nested deeper than ${MAX_JSON_NESTING} levels`);
      return;
    }
    this.jsonParts.push(text);
  }

  end(): void {
    if (this.stopped) return;
    if (this.mode === 'detect') this.detect(true);
    if (this.stopped) return;
    if (this.mode === 'csv') this.csv!.end();
    else if (this.mode === 'ndjson') this.lines!.end();
    else if (this.mode === 'json') this.parseJsonDocument(this.jsonParts.join(''));
    this.jsonParts = [];
  }

  /**
   * The input cannot be read further: one error for the whole upload (row 0, as rows past
   * this point are not read), naming the line where it happened when there are lines.
   */
  fail(reason: string): void {
    if (this.stopped) return;
    const line = this.mode === 'csv' ? this.csv!.line : this.mode === 'ndjson' ? this.lines!.line : 0;
    this.stop(0, 'row', line > 0 ? `${reason} (line ${line})` : reason);
  }

  /** Adds the count of errors that were not yielded, if any. */
  finish(): void {
    if (this.suppressed > 0) {
      const n = this.suppressed;
      this.out.push({ kind: 'error', row: -1, column: 'row', reason: `${n} more ${n === 1 ? 'error' : 'errors'} not shown` });
      this.suppressed = 0;
    }
  }

  private error(row: number, column: string, reason: string): void {
    this.errorCount++;
    if (this.errorCount <= this.maxErrors) this.out.push({ kind: 'error', row, column, reason });
    else this.suppressed++;
  }

  private stop(row: number, column: string, reason: string): void {
    this.error(row, column, reason);
    this.stopped = true;
    this.csv = null;
    this.lines = null;
    this.jsonParts = [];
    this.jsonNesting = null;
    this.head = '';
  }

  private point(row: number, metricName: string, ts: number, value: number): void {
    this.out.push({ kind: 'point', row, metric_name: metricName, ts, value });
  }

  private setLayout(layout: UploadLayout): void {
    this.layout = layout;
    this.out.push({ kind: 'layout', layout });
  }

  /** For layouts without a per-row name: false (and stopped) when the upload names no metric. */
  private requireOptionName(layout: UploadLayout): boolean {
    if (this.optionName !== undefined) return true;
    this.stop(0, 'metric_name', `required: the ${layout} layout carries no metric name, so the upload must give metric_name`);
    return false;
  }

  private detect(atEnd: boolean): void {
    const head = this.head;
    if (this.firstAt < 0) {
      let i = this.headScan;
      while (i < head.length && isJsonSpace(head.charCodeAt(i))) i++;
      this.headScan = i;
      if (i === head.length) {
        if (atEnd) this.stop(0, 'row', 'the upload is empty');
        // Blank space is held until the layout is known (CSV numbers its lines): only so much of it.
        else if (head.length > this.maxLineLength) this.stop(0, 'row', `the upload starts with more than ${this.maxLineLength} blank characters`);
        return;
      }
      this.firstAt = i;
    }
    const first = head.charCodeAt(this.firstAt);
    if (first === 0x5b) {
      // [
      this.setLayout('json-array');
      if (!this.requireOptionName('json-array')) return;
      this.startJson(head);
    } else if (first === 0x7b) {
      // {: NDJSON when the first line is a whole {timestamp, value} object, else one JSON body.
      // A first line longer than any NDJSON line can be is a body: it is not held to look for its end.
      const nl = head.indexOf('\n', this.headScan);
      const lineTooLong = (nl < 0 ? head.length : nl) - this.firstAt > this.maxLineLength;
      if (nl < 0 && !atEnd && !lineTooLong) {
        this.headScan = head.length;
        return;
      }
      if (!lineTooLong && isNdjsonLine(head.slice(this.firstAt, nl < 0 ? head.length : nl))) {
        this.setLayout('ndjson');
        this.mode = 'ndjson';
        this.lines = new LineReader((text, line) => this.ndjsonLine(text, line), this.maxLineLength);
        this.lines.feed(head);
      } else {
        this.setLayout('json-body');
        this.startJson(head);
      }
    } else {
      // CSV: the first record decides whether it is a header (see csvRecord)
      this.mode = 'csv';
      this.csv = new CsvReader((record, line, problem) => this.csvRecord(record, line, problem), { maxLineLength: this.maxLineLength, maxColumns: this.maxColumns });
      this.csv.feed(head);
    }
    this.head = '';
  }

  private startJson(head: string): void {
    this.mode = 'json';
    this.jsonNesting = new JsonNestingMeter(MAX_JSON_NESTING);
    this.jsonText(head);
  }

  /** The problem of a per-row metric name (validity, and agreement with the upload's name). */
  private rowNameProblem(name: string): string | null {
    if (name === this.lastName) return this.lastNameProblem;
    const problem = metricNameProblem(name);
    let reason = problem === null ? null : withText(problem, name);
    if (reason === null && this.optionName !== undefined && name !== this.optionName) {
      reason = withText(`differs from the upload's metric_name ${snippet(this.optionName)}`, name);
    }
    this.lastName = name;
    this.lastNameProblem = reason;
    return reason;
  }

  // ---- CSV ----

  /**
   * One CSV record. The cells are read from the record's offsets: a string is made only for a
   * new metric name, for a value that is not a plain decimal, and for an error's message.
   */
  private csvRecord(record: CsvRecord, line: number, problem: string | null): void {
    if (this.stopped) return;
    const count = record.count;
    if (this.layout === null) {
      let layout: UploadLayout = 'csv';
      if (problem === null && count === 2 && isHeader(record, CSV_HEADER)) layout = 'csv-with-header';
      else if (problem === null && count === 4 && isHeader(record, DOWNLOAD_CSV_HEADER)) layout = 'download-csv';
      this.setLayout(layout);
      if (layout !== 'download-csv' && !this.requireOptionName(layout)) return;
      if (layout !== 'csv') return; // the header line
    }
    if (problem !== null) {
      this.error(line, 'row', problem);
      return;
    }
    const { text, starts, ends } = record;
    if (this.layout === 'download-csv') {
      if (count !== 4) {
        this.error(line, 'row', `expected 4 columns (metric_name,timestamp,metric_numeric_value,updated_at), got ${count}`);
        return;
      }
      const name = this.csvName(text, starts[0]!, ends[0]!);
      const nameProblem = name === '' ? 'must not be empty' : this.rowNameProblem(name);
      if (nameProblem !== null) this.error(line, 'metric_name', nameProblem);
      const ts = this.csvTimestamp(this.timestamps, text, starts[1]!, ends[1]!, line, 'timestamp');
      const value = this.csvValue(text, starts[2]!, ends[2]!, line);
      const updatedAt = this.csvTimestamp(this.updatedAts, text, starts[3]!, ends[3]!, line, 'updated_at');
      if (nameProblem === null && ts >= 0 && value === value && updatedAt >= 0) this.point(line, name, ts, value);
      return;
    }
    if (count !== 2) {
      this.error(line, 'row', `expected 2 columns (timestamp,value), got ${count}`);
      return;
    }
    const ts = this.csvTimestamp(this.timestamps, text, starts[0]!, ends[0]!, line, 'timestamp');
    const value = this.csvValue(text, starts[1]!, ends[1]!, line);
    if (ts >= 0 && value === value) this.point(line, this.optionName!, ts, value);
  }

  /** The name cell's text: the previous row's string itself when the cell holds the same characters (no new string). */
  private csvName(text: string, start: number, end: number): string {
    const last = this.lastName;
    if (last !== null && last.length === end - start && text.startsWith(last, start)) return last;
    return text.slice(start, end);
  }

  /** The epoch ms of a timestamp cell, or -1 after reporting its problem. */
  private csvTimestamp(reader: TimestampReader, text: string, start: number, end: number, line: number, column: string): number {
    while (start < end && isBlankCode(text.charCodeAt(start))) start++;
    while (end > start && isBlankCode(text.charCodeAt(end - 1))) end--;
    if (start === end) {
      this.error(line, column, 'must not be empty');
      return -1;
    }
    const ms = reader.read(text, start, end);
    if (ms < 0) this.error(line, column, withText(reader.reason, text.slice(start, end)));
    return ms;
  }

  /** The value of a value cell, or NaN after reporting its problem. */
  private csvValue(text: string, start: number, end: number, line: number): number {
    const plain = plainDecimalAt(text, start, end);
    if (plain === plain) return plain; // not NaN
    const cell = text.slice(start, end);
    const result = parseValueText(cell);
    if (result.ok) return result.value;
    this.error(line, 'value', withText(result.reason, cell));
    return Number.NaN;
  }

  // ---- JSON ----

  private ndjsonLine(text: string | null, line: number): void {
    if (this.stopped) return;
    if (text === null) {
      this.error(line, 'row', lineTooLongProblem(this.maxLineLength));
      return;
    }
    if (isJsonBlank(text)) return;
    let item: unknown;
    try {
      item = JSON.parse(text);
    } catch (e) {
      this.error(line, 'row', `invalid JSON: ${messageOf(e)}`);
      return;
    }
    let underflow = false;
    if (isObject(item) && item['value'] === 0 && mayUnderflow(text)) {
      const reparsed = parseWithUnderflows(text);
      item = reparsed.doc;
      underflow = reparsed.underflows.has(item as object);
    }
    this.jsonItem(item, line, this.optionName, true, underflow);
  }

  private parseJsonDocument(text: string): void {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      this.error(0, 'row', `invalid JSON: ${messageOf(e)}`);
      return;
    }
    let underflows = NO_HOLDERS;
    if (hasZeroValue(Array.isArray(doc) ? doc : isObject(doc) ? doc['values'] : undefined) && mayUnderflow(text)) {
      ({ doc, underflows } = parseWithUnderflows(text));
    }

    if (this.layout === 'json-array') {
      if (!Array.isArray(doc)) {
        this.error(0, 'row', 'expected a JSON array of {timestamp, value} objects');
        return;
      }
      for (let i = 0; i < doc.length; i++) {
        const item: unknown = doc[i];
        this.jsonItem(item, i + 1, this.optionName, false, isObject(item) && underflows.has(item));
      }
      return;
    }

    // json-body
    if (!isObject(doc)) {
      this.error(0, 'row', 'expected a JSON object {metric_name, values}');
      return;
    }
    for (const key in doc) {
      if (key !== 'metric_name' && key !== 'values') this.error(0, 'row', `unknown field ${snippet(key)} (allowed: metric_name, values)`);
    }
    let name = this.optionName;
    if (has(doc, 'metric_name')) {
      const bodyName = doc['metric_name'];
      if (typeof bodyName !== 'string') return this.stop(0, 'metric_name', `must be a string, not ${kindOf(bodyName)}`);
      const problem = metricNameProblem(bodyName);
      if (problem !== null) return this.stop(0, 'metric_name', withText(problem, bodyName));
      if (name !== undefined && bodyName !== name) {
        return this.stop(0, 'metric_name', withText(`differs from the upload's metric_name ${snippet(name)}`, bodyName));
      }
      name = bodyName;
    } else if (name === undefined) {
      return this.stop(0, 'metric_name', 'required: give metric_name in the body or with the upload');
    }
    const values = doc['values'];
    if (!has(doc, 'values')) return this.error(0, 'row', 'values is required: an array of {timestamp, value} objects');
    if (!Array.isArray(values)) return this.error(0, 'row', `values must be an array of {timestamp, value} objects, not ${kindOf(values)}`);
    for (let i = 0; i < values.length; i++) {
      const item: unknown = values[i];
      this.jsonItem(item, i + 1, name, false, isObject(item) && underflows.has(item));
    }
  }

  /**
   * One {timestamp, value} object (with metric_name too when perRowName). `name` is the metric
   * for an object without its own. Reports every problem of the object, in field order.
   */
  private jsonItem(item: unknown, row: number, name: string | undefined, perRowName: boolean, underflow: boolean): void {
    const allowed = perRowName ? 'timestamp, value, metric_name' : 'timestamp, value';
    if (!isObject(item)) {
      this.error(row, 'row', `must be an object with ${allowed}, not ${kindOf(item)}`);
      return;
    }
    let ok = true;
    for (const key in item) {
      if (key !== 'timestamp' && key !== 'value' && !(perRowName && key === 'metric_name')) {
        this.error(row, 'row', `unknown field ${snippet(key)} (allowed: ${allowed})`);
        ok = false;
      }
    }

    let metricName = name;
    if (perRowName && has(item, 'metric_name')) {
      const own = item['metric_name'];
      const problem = typeof own !== 'string' ? `must be a string, not ${kindOf(own)}` : own === '' ? 'must not be empty' : this.rowNameProblem(own);
      if (problem !== null) {
        this.error(row, 'metric_name', problem);
        ok = false;
      } else {
        metricName = own as string;
      }
    } else if (metricName === undefined) {
      this.error(row, 'metric_name', 'required: this line has no metric_name and the upload gives none');
      ok = false;
    }

    let ts = -1;
    if (!has(item, 'timestamp')) {
      this.error(row, 'timestamp', 'required');
    } else {
      const text = item['timestamp'];
      if (typeof text !== 'string') {
        this.error(row, 'timestamp', `must be a string, not ${kindOf(text)}`);
      } else if (text === '') {
        this.error(row, 'timestamp', 'must not be empty');
      } else {
        const result = parseTimestamp(text);
        if (result.ok) ts = result.ms;
        else this.error(row, 'timestamp', withText(result.reason, text));
      }
    }

    let value: number | undefined;
    if (!has(item, 'value')) {
      this.error(row, 'value', 'required');
    } else {
      const v = item['value'];
      const problem = underflow ? VALUE_UNDERFLOW_REASON : valueProblem(v);
      if (problem === null) value = v as number;
      else this.error(row, 'value', problem);
    }

    if (ok && metricName !== undefined && ts >= 0 && value !== undefined) this.point(row, metricName, ts, value);
  }
}

/**
 * Parses decompressed upload bytes, chunk by chunk. The first item is the detected layout
 * (none when the upload is empty or the options are invalid); then points and errors in
 * input order; last, when more than maxErrors errors occurred, one
 * `{ row: -1, column: 'row', reason: 'N more errors not shown' }`. A problem that makes the
 * rest meaningless (no metric name, invalid UTF-8) is reported once, and reading stops.
 * Throws a RangeError (on the first next()) when maxErrors is not a non-negative integer.
 *
 * The items come in arrays, one per input chunk (empty arrays are not yielded): a caller that
 * reads millions of points pays for one await per chunk rather than one per point.
 */
export async function* parseUploadBatches(chunks: AsyncIterable<Uint8Array>, options: ParseUploadOptions = {}): AsyncGenerator<UploadItem[]> {
  const parser = new UploadParser(options);
  if (!parser.stopped) {
    const decoder = new Utf8Decoder();
    for await (const chunk of chunks) {
      const { text, invalid } = decoder.decode(chunk);
      if (text.length > 0) parser.push(text);
      if (invalid) parser.fail(INVALID_UTF8_REASON);
      const items = parser.take();
      if (items.length > 0) yield items;
      if (parser.stopped) break;
    }
    if (!parser.stopped) {
      const { text, invalid } = decoder.end();
      if (text.length > 0) parser.push(text);
      if (invalid) parser.fail(TRUNCATED_UTF8_REASON);
      else parser.end();
    }
  }
  parser.finish();
  const items = parser.take();
  if (items.length > 0) yield items;
}
