/**
 * A streaming RFC 4180 record reader over decoded text chunks. Memory is bounded by one
 * record: a few fields of a record of at most maxLineLength characters, whatever the input.
 * A longer record (a quoted field that never closes is one) or one with more than maxColumns
 * fields is reported with its problem; its text is not kept, and the next record still parses.
 *
 * Lines without a double quote take a fast path (indexOf for the newline and the commas):
 * their fields are handed over as offsets into the chunk's text, with no string made per
 * field, as most uploads are millions of such lines. Any other record goes through a
 * resumable state machine, so a chunk may end anywhere, inside a quoted field too. Line
 * numbers are physical lines: a newline inside a quoted field counts, and a record is
 * numbered by the line it starts on.
 */

/** The default most fields of a record. */
export const DEFAULT_MAX_COLUMNS = 64;
/** Fields kept per record; later ones are only counted (no layout has more than 4). */
const KEPT_FIELDS = 5;

const LF = 10;
const CR = 13;
const QUOTE = 34;
const COMMA = 44;

const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
const QUOTE_SEEN = 3; // a quote inside a quoted field: an escaped quote or the closing one
const AFTER_QUOTE = 4; // past a closing quote: only a separator (or the CR of CRLF) may follow

export const BARE_QUOTE_PROBLEM = 'a double quote inside an unquoted field (quote the whole field and double the quote)';
export const AFTER_QUOTE_PROBLEM = 'unexpected characters after a closing quote';
export const UNTERMINATED_PROBLEM = 'unterminated quoted field';
export const lineTooLongProblem = (max: number): string => `the line is longer than ${max} characters`;
export const tooManyColumnsProblem = (max: number): string => `more than ${max} columns`;

export type CsvReaderLimits = {
  /** Longest record, in characters (a quoted record may span several physical lines). */
  readonly maxLineLength: number;
  /** Most fields of a record. */
  readonly maxColumns: number;
};

/**
 * One record, as offsets: field i (i < KEPT_FIELDS) is text.slice(starts[i], ends[i]), without
 * the quoting of a quoted field. `count` may exceed KEPT_FIELDS (extra fields are counted,
 * not kept). `text` is the chunk the record was read from, or, for a record the state machine
 * read, its kept fields joined.
 */
export class CsvRecord {
  text = '';
  count = 0;
  readonly starts = new Int32Array(KEPT_FIELDS);
  readonly ends = new Int32Array(KEPT_FIELDS);

  /** Field i as a string (a new one: the hot path reads the offsets instead). */
  field(i: number): string {
    return i < this.count && i < KEPT_FIELDS ? this.text.slice(this.starts[i], this.ends[i]) : '';
  }

  /** Points the record at whole field strings (the state machine's records). */
  setFields(fields: readonly string[], count: number): void {
    const kept = Math.min(count, KEPT_FIELDS);
    let at = 0;
    for (let i = 0; i < kept; i++) {
      this.starts[i] = at;
      at += fields[i]!.length;
      this.ends[i] = at;
    }
    this.text = kept === 1 ? fields[0]! : fields.slice(0, kept).join('');
    this.count = count;
  }
}

/**
 * Receives every non-blank record. `record` is reused: read it during the call only.
 * `problem` is the first structural problem of the record, or null.
 */
export type CsvRecordHandler = (record: CsvRecord, line: number, problem: string | null) => void;

function isBlank(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== CR) return false;
  }
  return true;
}

export class CsvReader {
  /** The physical line the reader is on (1-based): the line of the next character. */
  line = 1;
  private readonly onRecord: CsvRecordHandler;
  private readonly maxLineLength: number;
  private readonly maxColumns: number;
  private readonly record = new CsvRecord();
  private readonly fields: string[] = []; // the state machine's fields
  private count = 0;
  private inRecord = false;
  private recordLine = 1;
  private state = FIELD_START;
  private field = '';
  private recordLength = 0; // characters of the current record before the current step
  private tooLong = false; // the record is longer than maxLineLength: its text is no longer kept
  private anyQuoted = false;
  private junkLength = 0; // characters after a closing quote
  private junkFirst = 0;
  private problem: string | null = null;

  constructor(onRecord: CsvRecordHandler, limits: CsvReaderLimits) {
    this.onRecord = onRecord;
    this.maxLineLength = limits.maxLineLength;
    this.maxColumns = limits.maxColumns;
  }

  feed(text: string): void {
    const len = text.length;
    const record = this.record;
    const { starts, ends } = record;
    let pos = 0;
    let quoteAt = -2; // next '"' at or after pos, -1 for none; recomputed once passed
    let commaAt = -2;
    while (pos < len) {
      if (!this.inRecord) {
        const nl = text.indexOf('\n', pos);
        if (nl >= 0 && nl - pos <= this.maxLineLength) {
          if (quoteAt !== -1 && quoteAt < pos) quoteAt = text.indexOf('"', pos);
          if (quoteAt === -1 || quoteAt > nl) {
            // Fast path: a whole line without quotes.
            const end = nl > pos && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
            let n = 0;
            let start = pos;
            for (;;) {
              if (commaAt !== -1 && commaAt < start) commaAt = text.indexOf(',', start);
              if (commaAt === -1 || commaAt >= end) {
                if (n < KEPT_FIELDS) {
                  starts[n] = start;
                  ends[n] = end;
                }
                n++;
                break;
              }
              if (n < KEPT_FIELDS) {
                starts[n] = start;
                ends[n] = commaAt;
              }
              n++;
              start = commaAt + 1;
            }
            if (n !== 1 || !isBlank(text, pos, end)) {
              record.text = text;
              record.count = n;
              this.onRecord(record, this.line, n > this.maxColumns ? tooManyColumnsProblem(this.maxColumns) : null);
            }
            this.line++;
            pos = nl + 1;
            continue;
          }
        }
        this.inRecord = true;
        this.recordLine = this.line;
      }
      pos = this.step(text, pos);
    }
  }

  /** Ends the input: a last record without a final newline is still a record. */
  end(): void {
    if (!this.inRecord) return;
    if (this.state === QUOTED) this.problem ??= UNTERMINATED_PROBLEM;
    this.endField(true);
    this.endRecord();
  }

  /** Runs the state machine from pos to the end of the current record or of the text. */
  private step(text: string, from: number): number {
    const pos = this.run(text, from);
    // A record that ended in this step was measured by endRecord; one still open is measured here.
    if (this.inRecord) this.measure(pos - from);
    return pos;
  }

  private measure(length: number): void {
    this.recordLength += length;
    if (this.recordLength > this.maxLineLength) this.dropText();
  }

  private dropText(): void {
    this.tooLong = true;
    this.field = '';
  }

  // Stays one method: the tokenizer's state machine, one case per state, so the transitions read side by side;
  // it runs for every character of every CSV upload, where a call per state would cost.
  private run(text: string, start: number): number {
    const len = text.length;
    let pos = start;
    while (pos < len) {
      switch (this.state) {
        case FIELD_START: {
          if (text.charCodeAt(pos) === QUOTE) {
            this.state = QUOTED;
            this.anyQuoted = true;
            pos++;
          } else {
            this.state = UNQUOTED;
          }
          break;
        }
        case UNQUOTED: {
          let i = pos;
          let c = 0;
          while (i < len) {
            c = text.charCodeAt(i);
            if (c === COMMA || c === LF || c === QUOTE) break;
            i++;
          }
          this.append(text, pos, i);
          if (i === len) return len;
          pos = i + 1;
          if (c === QUOTE) {
            this.problem ??= BARE_QUOTE_PROBLEM;
            this.append(text, i, i + 1);
          } else if (c === COMMA) {
            this.endField(false);
          } else {
            this.line++;
            this.measure(pos - start);
            this.endField(true);
            this.endRecord();
            return pos;
          }
          break;
        }
        case QUOTED: {
          let i = pos;
          while (i < len) {
            const c = text.charCodeAt(i);
            if (c === QUOTE) break;
            if (c === LF) this.line++;
            i++;
          }
          this.append(text, pos, i);
          if (i === len) return len;
          pos = i + 1;
          this.state = QUOTE_SEEN;
          break;
        }
        case QUOTE_SEEN: {
          if (text.charCodeAt(pos) === QUOTE) {
            this.append(text, pos, pos + 1);
            this.state = QUOTED;
            pos++;
          } else {
            this.state = AFTER_QUOTE;
          }
          break;
        }
        default: {
          // AFTER_QUOTE
          let i = pos;
          let c = 0;
          while (i < len) {
            c = text.charCodeAt(i);
            if (c === COMMA || c === LF) break;
            i++;
          }
          if (i > pos) {
            if (this.junkLength === 0) this.junkFirst = text.charCodeAt(pos);
            this.junkLength += i - pos;
          }
          if (i === len) return len;
          pos = i + 1;
          if (c === COMMA) {
            this.endField(false);
          } else {
            this.line++;
            this.measure(pos - start);
            this.endField(true);
            this.endRecord();
            return pos;
          }
        }
      }
    }
    return pos;
  }

  private append(text: string, from: number, to: number): void {
    if (from === to || this.tooLong) return;
    if (this.recordLength + this.field.length + (to - from) > this.maxLineLength) {
      this.dropText();
      return;
    }
    this.field += text.slice(from, to);
  }

  private endField(atLineEnd: boolean): void {
    let value = this.field;
    if (this.state === UNQUOTED && atLineEnd && value.charCodeAt(value.length - 1) === CR) value = value.slice(0, -1);
    if (this.state === AFTER_QUOTE && this.junkLength > 0 && !(atLineEnd && this.junkLength === 1 && this.junkFirst === CR)) {
      this.problem ??= AFTER_QUOTE_PROBLEM;
    }
    if (this.count < KEPT_FIELDS) this.fields[this.count] = value;
    this.count++;
    if (this.count > this.maxColumns) this.problem ??= tooManyColumnsProblem(this.maxColumns);
    this.field = '';
    this.junkLength = 0;
    this.state = FIELD_START;
  }

  private endRecord(): void {
    if (this.tooLong) this.problem = lineTooLongProblem(this.maxLineLength);
    const first = this.fields[0]!;
    const blank = this.count === 1 && !this.anyQuoted && this.problem === null && isBlank(first, 0, first.length);
    if (!blank) {
      this.record.setFields(this.fields, this.count);
      this.onRecord(this.record, this.recordLine, this.problem);
    }
    this.count = 0;
    this.recordLength = 0;
    this.tooLong = false;
    this.problem = null;
    this.anyQuoted = false;
    this.inRecord = false;
  }
}
