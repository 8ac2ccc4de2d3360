/**
 * A streaming RFC 4180 record reader over decoded text chunks. Memory is bounded by one
 * record: a few fields of at most MAX_CSV_FIELD_LENGTH characters each, whatever the input.
 *
 * Lines without a double quote take a fast path (indexOf for the newline and the commas,
 * one slice per field); any other record goes through a resumable state machine, so a chunk
 * may end anywhere, inside a quoted field too. Line numbers are physical lines: a newline
 * inside a quoted field counts, and a record is numbered by the line it starts on.
 */

/** Longer fields make their record an error and are not kept. */
export const MAX_CSV_FIELD_LENGTH = 65_536;
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
export const FIELD_TOO_LONG_PROBLEM = `a field is longer than ${MAX_CSV_FIELD_LENGTH} characters`;

/**
 * Receives every non-blank record. `fields` is reused: read it during the call only.
 * `count` may exceed fields.length (extra fields are counted, not kept). `problem` is the
 * first structural problem of the record, or null.
 */
export type CsvRecordHandler = (fields: readonly string[], count: number, line: number, problem: string | null) => void;

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== CR) return false;
  }
  return true;
}

export class CsvReader {
  /** The physical line the reader is on (1-based): the line of the next character. */
  line = 1;
  private readonly onRecord: CsvRecordHandler;
  private readonly fields: string[] = [];
  private count = 0;
  private inRecord = false;
  private recordLine = 1;
  private state = FIELD_START;
  private field = '';
  private fieldTooLong = false;
  private anyQuoted = false;
  private junkLength = 0; // characters after a closing quote
  private junkFirst = 0;
  private problem: string | null = null;

  constructor(onRecord: CsvRecordHandler) {
    this.onRecord = onRecord;
  }

  feed(text: string): void {
    const len = text.length;
    const fields = this.fields;
    let pos = 0;
    let quoteAt = -2; // next '"' at or after pos, -1 for none; recomputed once passed
    let commaAt = -2;
    while (pos < len) {
      if (!this.inRecord) {
        const nl = text.indexOf('\n', pos);
        if (nl >= 0 && nl - pos <= MAX_CSV_FIELD_LENGTH) {
          if (quoteAt !== -1 && quoteAt < pos) quoteAt = text.indexOf('"', pos);
          if (quoteAt === -1 || quoteAt > nl) {
            // Fast path: a whole line without quotes.
            const end = nl > pos && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl;
            let n = 0;
            let start = pos;
            for (;;) {
              if (commaAt !== -1 && commaAt < start) commaAt = text.indexOf(',', start);
              if (commaAt === -1 || commaAt >= end) {
                if (n < KEPT_FIELDS) fields[n] = text.slice(start, end);
                n++;
                break;
              }
              if (n < KEPT_FIELDS) fields[n] = text.slice(start, commaAt);
              n++;
              start = commaAt + 1;
            }
            if (n !== 1 || !isBlank(fields[0]!)) this.onRecord(fields, n, this.line, null);
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
  private step(text: string, pos: number): number {
    const len = text.length;
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
    if (from === to || this.fieldTooLong) return;
    if (this.field.length + (to - from) > MAX_CSV_FIELD_LENGTH) {
      this.fieldTooLong = true;
      this.field = '';
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
    if (this.fieldTooLong) this.problem ??= FIELD_TOO_LONG_PROBLEM;
    if (this.count < KEPT_FIELDS) this.fields[this.count] = value;
    this.count++;
    this.field = '';
    this.fieldTooLong = false;
    this.junkLength = 0;
    this.state = FIELD_START;
  }

  private endRecord(): void {
    const blank = this.count === 1 && !this.anyQuoted && this.problem === null && isBlank(this.fields[0]!);
    if (!blank) this.onRecord(this.fields, this.count, this.recordLine, this.problem);
    this.count = 0;
    this.problem = null;
    this.anyQuoted = false;
    this.inRecord = false;
  }
}
