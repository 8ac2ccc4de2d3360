/**
 * Parses an uploaded metrics document (already decompressed bytes) into points and
 * row-numbered errors. Every invalid row is reported; nothing is dropped or changed silently.
 * Points are yielded even when other rows are invalid: the caller decides (all or nothing).
 *
 * Layouts, told apart by the content (after a UTF-8 BOM and leading whitespace: parse/detect.ts):
 *   `[`  json-array       [{timestamp, value}, ...]                  row = 1-based index
 *   `{`  ndjson           one {timestamp, value, metric_name?} per line   row = physical line
 *        json-body        {metric_name?, values: [{timestamp, value}]}   row = 1-based index
 *   else csv-with-header `timestamp,value` header line, then rows      row = physical line
 *        download-csv    `metric_name,timestamp,metric_numeric_value,updated_at` header
 *        csv             no header: every line is `timestamp,value`
 * CSV (parse/csv.ts) and NDJSON (parse/ndjson.ts) are streamed with bounded memory (lines
 * and columns capped); the two JSON documents (parse/json.ts) are buffered up to
 * maxJsonDocumentLength characters and parsed with JSON.parse, after a scan that refuses
 * nesting deeper than MAX_JSON_NESTING as it arrives. The error cap and the stop: parse/output.ts.
 */
import { DEFAULT_MAX_COLUMNS } from '../points/csv-reader.ts';
import { DEFAULT_MAX_LINE_LENGTH } from '../points/line-reader.ts';
import { metricNameProblem } from '../points/metric-name.ts';
import { CsvUpload } from './parse/csv.ts';
import { LayoutDetector } from './parse/detect.ts';
import { DEFAULT_MAX_JSON_DOCUMENT_LENGTH, DEFAULT_MAX_UPLOAD_ERRORS, type LayoutReader, type ParseUploadOptions, type UploadItem } from './parse/items.ts';
import { JsonDocumentUpload } from './parse/json.ts';
import { MetricNames } from './parse/metric-names.ts';
import { NdjsonUpload } from './parse/ndjson.ts';
import { UploadOutput } from './parse/output.ts';
import { withText } from './parse/text.ts';
import { Utf8Decoder } from '../points/utf8.ts';

export {
  DEFAULT_MAX_JSON_DOCUMENT_LENGTH,
  DEFAULT_MAX_UPLOAD_ERRORS,
  MAX_JSON_NESTING,
  type ParseUploadOptions,
  type UploadItem,
  type UploadLayout,
} from './parse/items.ts';

const INVALID_UTF8_REASON = 'invalid UTF-8: the upload must be UTF-8 encoded';
const TRUNCATED_UTF8_REASON = 'invalid UTF-8: the upload ends inside a multi-byte character';

function positiveOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

/** Detection, then the chosen layout's reader, over one output. */
class UploadParser {
  readonly out: UploadOutput;
  private readonly names: MetricNames;
  private readonly maxLineLength: number;
  private readonly maxColumns: number;
  private readonly maxJsonDocumentLength: number;
  private detector: LayoutDetector | null;
  private reader: LayoutReader | null = null;

  constructor(options: ParseUploadOptions) {
    const maxErrors = options.maxErrors ?? DEFAULT_MAX_UPLOAD_ERRORS;
    if (!Number.isInteger(maxErrors) || maxErrors < 0) throw new RangeError(`maxErrors must be a non-negative integer, got ${maxErrors}`);
    this.maxLineLength = positiveOption('maxLineLength', options.maxLineLength, DEFAULT_MAX_LINE_LENGTH);
    this.maxColumns = positiveOption('maxColumns', options.maxColumns, DEFAULT_MAX_COLUMNS);
    this.maxJsonDocumentLength = positiveOption('maxJsonDocumentLength', options.maxJsonDocumentLength, DEFAULT_MAX_JSON_DOCUMENT_LENGTH);
    this.out = new UploadOutput(maxErrors);
    this.names = new MetricNames(options.metricName, this.out);
    this.detector = new LayoutDetector(this.maxLineLength);
    if (options.metricName !== undefined) {
      const problem = metricNameProblem(options.metricName);
      if (problem !== null) this.out.stop(0, 'metric_name', withText(problem, String(options.metricName)));
    }
  }

  get stopped(): boolean {
    return this.out.stopped;
  }

  push(text: string): void {
    if (this.stopped) return;
    if (this.reader) this.reader.feed(text);
    else this.detect(text, false);
    this.dropIfStopped();
  }

  end(): void {
    if (this.stopped) return;
    if (!this.reader) this.detect('', true);
    if (this.stopped) return;
    this.reader?.end();
    this.dropIfStopped();
  }

  /**
   * The input cannot be read further: one error for the whole upload (row 0, as rows past
   * this point are not read), naming the line where it happened when there are lines.
   */
  fail(reason: string): void {
    if (this.stopped) return;
    const line = this.reader?.line ?? 0;
    this.out.stop(0, 'row', line > 0 ? `${reason} (line ${line})` : reason);
    this.dropIfStopped();
  }

  private detect(text: string, atEnd: boolean): void {
    const detection = this.detector!.push(text, atEnd);
    if (detection.kind === 'wait') return;
    if (detection.kind === 'refused') {
      this.out.stop(0, 'row', detection.reason);
      return;
    }
    this.detector = null;
    const { layout, head } = detection;
    if (layout === 'csv') {
      // The first record decides whether it is a header (parse/csv.ts).
      this.reader = new CsvUpload(this.out, this.names, { maxLineLength: this.maxLineLength, maxColumns: this.maxColumns });
    } else {
      this.out.layout(layout);
      if (layout === 'json-array' && !this.names.require(layout)) return;
      this.reader =
        layout === 'ndjson'
          ? new NdjsonUpload(this.out, this.names, this.maxLineLength)
          : new JsonDocumentUpload(this.out, this.names, layout, this.maxJsonDocumentLength, detection.document);
    }
    this.reader.feed(head);
  }

  /** What is held for reading goes once the upload has stopped. */
  private dropIfStopped(): void {
    if (!this.stopped) return;
    this.reader = null;
    this.detector = null;
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
  const out = parser.out;
  if (!parser.stopped) {
    const decoder = new Utf8Decoder();
    for await (const chunk of chunks) {
      const { text, invalid } = decoder.decode(chunk);
      if (text.length > 0) parser.push(text);
      if (invalid) parser.fail(INVALID_UTF8_REASON);
      const items = out.take();
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
  out.finish();
  const items = out.take();
  if (items.length > 0) yield items;
}
