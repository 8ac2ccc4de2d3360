import { CsvReader, type CsvRecord } from '../../points/csv-reader.ts';
import { TimestampReader } from '../../points/timestamp.ts';
import { isBlankCode, parseValueText, plainDecimalAt, trimBlanks } from '../../points/value.ts';
import type { LayoutReader, UploadLayout } from './items.ts';
import type { MetricNames } from './metric-names.ts';
import type { UploadOutput } from './output.ts';
import { withText } from './text.ts';

const CSV_HEADER = ['timestamp', 'value'];
const DOWNLOAD_CSV_HEADER = ['metric_name', 'timestamp', 'metric_numeric_value', 'updated_at'];

function isHeader(record: CsvRecord, names: readonly string[]): boolean {
  return names.every((name, i) => trimBlanks(record.field(i)).toLowerCase() === name);
}

/**
 * The CSV layouts, streamed record by record; the first record decides which: a
 * `timestamp,value` header (csv-with-header), the download's header (download-csv), or none
 * (csv: every line is a row). row = the physical line.
 */
export class CsvUpload implements LayoutReader {
  private readonly out: UploadOutput;
  private readonly names: MetricNames;
  private readonly reader: CsvReader;
  private layout: UploadLayout | null = null;
  // Timestamps, with the last date's day number; updated_at has its own (its dates differ from the timestamps').
  private readonly timestamps = new TimestampReader();
  private readonly updatedAts = new TimestampReader();

  constructor(out: UploadOutput, names: MetricNames, bounds: { maxLineLength: number; maxColumns: number }) {
    this.out = out;
    this.names = names;
    this.reader = new CsvReader((record, line, problem) => this.csvRecord(record, line, problem), bounds);
  }

  get line(): number {
    return this.reader.line;
  }

  feed(text: string): void {
    this.reader.feed(text);
  }

  end(): void {
    this.reader.end();
  }

  /**
   * One CSV record. The cells are read from the record's offsets: a string is made only for a
   * new metric name, for a value that is not a plain decimal, and for an error's message.
   */
  private csvRecord(record: CsvRecord, line: number, problem: string | null): void {
    if (this.out.stopped) return;
    const count = record.count;
    if (this.layout === null) {
      let layout: UploadLayout = 'csv';
      if (problem === null && count === 2 && isHeader(record, CSV_HEADER)) layout = 'csv-with-header';
      else if (problem === null && count === 4 && isHeader(record, DOWNLOAD_CSV_HEADER)) layout = 'download-csv';
      this.layout = layout;
      this.out.layout(layout);
      if (layout !== 'download-csv' && !this.names.require(layout)) return;
      if (layout !== 'csv') return; // the header line
    }
    if (problem !== null) {
      this.out.error(line, 'row', problem);
      return;
    }
    const { text, starts, ends } = record;
    if (this.layout === 'download-csv') {
      if (count !== 4) {
        this.out.error(line, 'row', `expected 4 columns (metric_name,timestamp,metric_numeric_value,updated_at), got ${count}`);
        return;
      }
      const name = this.csvName(text, starts[0]!, ends[0]!);
      const nameProblem = name === '' ? 'must not be empty' : this.names.rowProblem(name);
      if (nameProblem !== null) this.out.error(line, 'metric_name', nameProblem);
      const ts = this.csvTimestamp(this.timestamps, text, starts[1]!, ends[1]!, line, 'timestamp');
      const value = this.csvValue(text, starts[2]!, ends[2]!, line);
      const updatedAt = this.csvTimestamp(this.updatedAts, text, starts[3]!, ends[3]!, line, 'updated_at');
      if (nameProblem === null && ts >= 0 && value === value && updatedAt >= 0) this.out.point(line, name, ts, value);
      return;
    }
    if (count !== 2) {
      this.out.error(line, 'row', `expected 2 columns (timestamp,value), got ${count}`);
      return;
    }
    const ts = this.csvTimestamp(this.timestamps, text, starts[0]!, ends[0]!, line, 'timestamp');
    const value = this.csvValue(text, starts[1]!, ends[1]!, line);
    if (ts >= 0 && value === value) this.out.point(line, this.names.option!, ts, value);
  }

  /** The name cell's text: the previous row's string itself when the cell holds the same characters (no new string). */
  private csvName(text: string, start: number, end: number): string {
    const last = this.names.last;
    if (last !== null && last.length === end - start && text.startsWith(last, start)) return last;
    return text.slice(start, end);
  }

  /** The epoch ms of a timestamp cell, or -1 after reporting its problem. */
  private csvTimestamp(reader: TimestampReader, text: string, start: number, end: number, line: number, column: string): number {
    while (start < end && isBlankCode(text.charCodeAt(start))) start++;
    while (end > start && isBlankCode(text.charCodeAt(end - 1))) end--;
    if (start === end) {
      this.out.error(line, column, 'must not be empty');
      return -1;
    }
    const ms = reader.read(text, start, end);
    if (ms < 0) this.out.error(line, column, withText(reader.reason, text.slice(start, end)));
    return ms;
  }

  /** The value of a value cell, or NaN after reporting its problem. */
  private csvValue(text: string, start: number, end: number, line: number): number {
    const plain = plainDecimalAt(text, start, end);
    if (plain === plain) return plain; // not NaN
    const cell = text.slice(start, end);
    const result = parseValueText(cell);
    if (result.ok) return result.value;
    this.out.error(line, 'value', withText(result.reason, cell));
    return Number.NaN;
  }
}
