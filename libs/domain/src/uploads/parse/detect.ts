import { has, isObject } from './json-item.ts';
import { isJsonSpace } from './text.ts';

/** The reader an upload needs; which CSV layout it is, the CSV reader tells from the first record. */
type DetectedLayout = 'json-array' | 'json-body' | 'ndjson' | 'csv';

export type Detection =
  /** More text is needed. */
  | { readonly kind: 'wait' }
  | { readonly kind: 'refused'; readonly reason: string }
  /**
   * The layout, and the text held so far, which its reader reads first. `document`: the JSON
   * value of the whole upload, when the upload was one line that had to be parsed to tell its
   * layout (a json-body sent on one line, as most are): its reader need not parse it again.
   */
  | { readonly kind: 'layout'; readonly layout: DetectedLayout; readonly head: string; readonly document?: unknown };

const WAIT: Detection = { kind: 'wait' };

/** What parseLine answers for a line that is not JSON. */
const NOT_JSON = Symbol('not JSON');

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return NOT_JSON;
  }
}

/** A first line that is a whole {timestamp, value} object (not a body with values) starts NDJSON. */
const isNdjsonItem = (o: unknown): boolean => isObject(o) && has(o, 'timestamp') && has(o, 'value') && !has(o, 'values');

/**
 * Tells the layout from the content, after leading whitespace (a UTF-8 BOM is gone already):
 * `[` a json-array; `{` NDJSON when the first line is a whole {timestamp, value} object, else a
 * json-body; anything else CSV. Holds the text until it knows.
 */
export class LayoutDetector {
  private head = '';
  private scan = 0;
  private firstAt = -1;
  private readonly maxLineLength: number;

  constructor(maxLineLength: number) {
    this.maxLineLength = maxLineLength;
  }

  /** Adds text (none at the end of the upload) and says what is known. */
  push(text: string, atEnd: boolean): Detection {
    const head = (this.head += text);
    if (this.firstAt < 0) {
      let i = this.scan;
      while (i < head.length && isJsonSpace(head.charCodeAt(i))) i++;
      this.scan = i;
      if (i === head.length) {
        if (atEnd) return { kind: 'refused', reason: 'the upload is empty' };
        // Blank space is held until the layout is known (CSV numbers its lines): only so much of it.
        if (head.length > this.maxLineLength) return { kind: 'refused', reason: `the upload starts with more than ${this.maxLineLength} blank characters` };
        return WAIT;
      }
      this.firstAt = i;
    }
    const first = head.charCodeAt(this.firstAt);
    let layout: DetectedLayout = 'csv';
    if (first === 0x5b) {
      // [
      layout = 'json-array';
    } else if (first === 0x7b) {
      // {: a first line longer than any NDJSON line can be is a body: it is not held to look for its end.
      const nl = head.indexOf('\n', this.scan);
      const lineTooLong = (nl < 0 ? head.length : nl) - this.firstAt > this.maxLineLength;
      if (nl < 0 && !atEnd && !lineTooLong) {
        this.scan = head.length;
        return WAIT;
      }
      const parsed = lineTooLong ? NOT_JSON : parseLine(head.slice(this.firstAt, nl < 0 ? head.length : nl));
      layout = isNdjsonItem(parsed) ? 'ndjson' : 'json-body';
      // The upload was this one line: its value is the document's.
      if (layout === 'json-body' && nl < 0 && atEnd && parsed !== NOT_JSON) {
        this.head = '';
        return { kind: 'layout', layout, head, document: parsed };
      }
    }
    this.head = '';
    return { kind: 'layout', layout, head };
  }
}
