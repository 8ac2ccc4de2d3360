import { lineTooLongProblem } from '../../points/csv-reader.ts';
import { LineReader } from '../../points/line-reader.ts';
import type { LayoutReader } from './items.ts';
import { isObject, mayUnderflow, parseWithUnderflows, readJsonItem } from './json-item.ts';
import type { MetricNames } from './metric-names.ts';
import type { UploadOutput } from './output.ts';
import { isJsonBlank, messageOf } from './text.ts';

/** The ndjson layout: one {timestamp, value, metric_name?} object per line, streamed line by line. */
export class NdjsonUpload implements LayoutReader {
  private readonly out: UploadOutput;
  private readonly names: MetricNames;
  private readonly maxLineLength: number;
  private readonly lines: LineReader;

  constructor(out: UploadOutput, names: MetricNames, maxLineLength: number) {
    this.out = out;
    this.names = names;
    this.maxLineLength = maxLineLength;
    this.lines = new LineReader((text, line) => this.ndjsonLine(text, line), maxLineLength);
  }

  get line(): number {
    return this.lines.line;
  }

  feed(text: string): void {
    this.lines.feed(text);
  }

  end(): void {
    this.lines.end();
  }

  private ndjsonLine(text: string | null, line: number): void {
    if (this.out.stopped) return;
    if (text === null) {
      this.out.error(line, 'row', lineTooLongProblem(this.maxLineLength));
      return;
    }
    if (isJsonBlank(text)) return;
    let item: unknown;
    try {
      item = JSON.parse(text);
    } catch (e) {
      this.out.error(line, 'row', `invalid JSON: ${messageOf(e)}`);
      return;
    }
    let underflow = false;
    if (isObject(item) && item['value'] === 0 && mayUnderflow(text)) {
      const reparsed = parseWithUnderflows(text);
      item = reparsed.doc;
      underflow = reparsed.underflows.has(item as object);
    }
    readJsonItem(this.out, this.names, item, line, this.names.option, true, underflow);
  }
}
