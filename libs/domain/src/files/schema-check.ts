import { DEFAULT_MAX_LINE_LENGTH } from '../points/line-reader.ts';
import { DEFAULT_MAX_COLUMNS } from '../points/csv-reader.ts';
import { Utf8Decoder } from '../points/utf8.ts';

/**
 * What `enforce_schema=true` demands of a file, checked in one streaming pass with constant
 * memory: UTF-8 text that is either well-formed CSV (RFC 4180) with a header row of non-empty,
 * distinct names and the same number of fields on every row, or one JSON value, or NDJSON
 * (one JSON value per line). The first non-blank character decides: `{` or `[` means JSON,
 * anything else CSV. The verdict names the 1-based line of the first problem.
 */
export type SchemaFormat = 'csv' | 'json' | 'ndjson';
export type SchemaVerdict =
  | { readonly ok: true; readonly format: SchemaFormat; readonly records: number }
  | { readonly ok: false; readonly format: SchemaFormat | null; readonly line: number; readonly reason: string };

type Problem = { line: number; reason: string };

export const MAX_JSON_DEPTH = 1000;

/** The CSV header is the only text the check keeps (its names must be distinct): it is bounded. */
export type SchemaLimits = {
  /** Longest header row, in characters. */
  readonly maxHeaderLength: number;
  /** Most columns the header may name. */
  readonly maxColumns: number;
};

export const DEFAULT_SCHEMA_LIMITS: SchemaLimits = { maxHeaderLength: DEFAULT_MAX_LINE_LENGTH, maxColumns: DEFAULT_MAX_COLUMNS };

interface Checker {
  readonly line: number;
  feed(text: string): Problem | null;
  end(): Problem | null;
  readonly format: SchemaFormat;
  readonly records: number;
}

const LF = 10;
const CR = 13;
const QUOTE = 34;
const COMMA = 44;

/** RFC 4180 records, CRLF or LF (or a lone CR) ending each; quoted fields may hold any of them. */
export class CsvChecker implements Checker {
  readonly format = 'csv' as const;
  constructor(limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS) {
    this.limits = limits;
  }

  records = 0;
  line = 1;
  private recordLine = 1;
  private fieldLine = 1;
  private fields = 0; // fields completed in the current record
  private state: 'start' | 'unquoted' | 'quoted' | 'quote' = 'start';
  private recordEmpty = true; // nothing at all on this record yet
  private afterCR = false;
  private columns: number | null = null; // the header's field count
  private header: string[] | null = [];
  private field = ''; // text of the current field, kept for the header row only
  private headerLength = 0;
  private readonly limits: SchemaLimits;
  private blankLine: number | null = null;
  private blankLines = 0;

  feed(text: string): Problem | null {
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (this.afterCR) {
        this.afterCR = false;
        if (c === LF) continue; // the LF of a CRLF: the record already ended at the CR
      }
      const problem = this.char(c, text, i);
      if (problem) return problem;
    }
    return null;
  }

  private char(c: number, text: string, i: number): Problem | null {
    switch (this.state) {
      case 'quoted':
        if (c === QUOTE) this.state = 'quote';
        else {
          if (c === LF || c === CR) this.newline(c);
          return this.keep(text, i);
        }
        return null;
      case 'quote':
        if (c === QUOTE) {
          this.state = 'quoted';
          return this.keep(text, i);
        }
        if (c === COMMA) return this.endField();
        if (c === LF || c === CR) return this.endRecord(c);
        return { line: this.line, reason: 'unexpected character after the closing quote of a field' };
      case 'start':
      case 'unquoted':
        if (this.state === 'start' && c === QUOTE) {
          this.state = 'quoted';
          this.fieldLine = this.line;
          this.recordEmpty = false;
          return null;
        }
        if (c === COMMA) {
          this.recordEmpty = false;
          return this.endField();
        }
        if (c === LF || c === CR) return this.endRecord(c);
        if (c === QUOTE) return { line: this.line, reason: 'a quote inside an unquoted field (quote the whole field and double the quote)' };
        this.state = 'unquoted';
        this.recordEmpty = false;
        return this.keep(text, i);
    }
  }

  /** Keeps a character of a header name; the names of a header longer than the bound are not kept. */
  private keep(text: string, i: number): Problem | null {
    if (this.header === null) return null;
    if (++this.headerLength > this.limits.maxHeaderLength)
      return { line: 1, reason: `the header row is longer than ${this.limits.maxHeaderLength} characters` };
    this.field += text[i];
    return null;
  }

  private newline(c: number): void {
    this.line++;
    if (c === CR) this.afterCR = true;
  }

  private endField(): Problem | null {
    this.fields++;
    if (this.header !== null) {
      if (this.fields > this.limits.maxColumns) return { line: 1, reason: `the header has more than ${this.limits.maxColumns} columns` };
      this.header.push(this.field);
    }
    this.field = '';
    this.state = 'start';
    return null;
  }

  /** Ends the record at a line break (c) or at the end of the input (c = -1). */
  private endRecord(c: number): Problem | null {
    const line = this.recordLine;
    if (c >= 0) this.newline(c);
    if (this.recordEmpty) {
      // A blank line: fine at the very end; a one-field row of an empty value only in a one-column file.
      this.blankLine ??= line;
      this.blankLines++;
      this.recordLine = this.line;
      this.state = 'start';
      return null;
    }
    if (this.blankLine !== null) {
      if (this.columns !== 1) return { line: this.blankLine, reason: `an empty line where a row of ${this.columns} fields was expected` };
      this.records += this.blankLines; // in a one-column file, each was a row with an empty value
      this.blankLine = null;
      this.blankLines = 0;
    }
    const problem = this.endField();
    if (problem) return problem;
    const found = this.fields;
    this.fields = 0;
    this.recordEmpty = true;
    this.recordLine = this.line;
    if (this.columns === null) {
      this.columns = found;
      const names = this.header!;
      this.header = null;
      const seen = new Set<string>();
      for (const [k, raw] of names.entries()) {
        const name = raw.trim();
        if (name === '') return { line, reason: `the header's column ${k + 1} has no name` };
        if (seen.has(name)) return { line, reason: `the header names column ${JSON.stringify(name)} twice` };
        seen.add(name);
      }
      return null;
    }
    this.records++;
    if (found !== this.columns) return { line, reason: `expected ${this.columns} fields as in the header, found ${found}` };
    return null;
  }

  end(): Problem | null {
    if (this.state === 'quoted') return { line: this.fieldLine, reason: 'a quoted field is never closed' };
    if (!this.recordEmpty || this.state === 'quote') {
      const problem = this.endRecord(-1);
      if (problem) return problem;
    }
    if (this.columns === null) return { line: 1, reason: 'no header row' };
    return null;
  }
}

type Container = 1 | 2; // object, array
const OBJECT: Container = 1;
const ARRAY: Container = 2;

const S = {
  VALUE: 0, // a value must come (after '[' or ',' in an array, ':' in an object, or at the top)
  ARRAY_FIRST: 1, // after '[': a value or ']'
  OBJECT_FIRST: 2, // after '{': a key or '}'
  KEY: 3, // after ',' in an object: a key
  COLON: 4,
  AFTER: 5, // after a value inside a container: ',' or the closing bracket
  TOP_AFTER: 6, // after a top-level value
  STRING: 7,
  ESCAPE: 8,
  UNICODE: 9,
  LITERAL: 10,
  NUMBER: 11,
} as const;

const isWs = (c: number) => c === 32 || c === 9 || c === LF || c === CR;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isHex = (c: number) => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

/**
 * A JSON well-formedness checker (RFC 8259) that builds nothing: a pushdown automaton over
 * characters. Several top-level values are NDJSON: each must then sit on a line of its own.
 */
export class JsonChecker implements Checker {
  private stack: Container[] = [];
  private state: number = S.VALUE;
  private stringIsKey = false;
  private hexLeft = 0;
  private literal = '';
  private literalAt = 0;
  // number sub-state: 0 after '-', 1 after a leading 0, 2 integer digits, 3 after '.', 4 fraction, 5 after 'e', 6 after the exponent's sign, 7 exponent digits
  private num = 0;
  line = 1;
  private afterCR = false;
  private values = 0; // top-level values completed
  private valueLine = 1; // where the current top-level value started
  private multiline: number | null = null; // first top-level value that spanned lines
  private sawNewlineAfterValue = false;

  get format(): SchemaFormat {
    return this.values > 1 ? 'ndjson' : 'json';
  }

  get records(): number {
    return this.values;
  }

  feed(text: string): Problem | null {
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      const problem = this.char(c);
      if (problem) return problem;
      // Counted after the character, so a problem at a line break is on the line it ends.
      if (c === LF || c === CR) {
        if (this.values > 0 && this.stack.length > 0) return { line: this.valueLine, reason: 'this NDJSON value is not complete on its line' };
        if (!(c === LF && this.afterCR)) this.line++;
        this.afterCR = c === CR;
      } else this.afterCR = false;
    }
    return null;
  }

  private fail(reason: string): Problem {
    return { line: this.line, reason };
  }

  private char(c: number): Problem | null {
    switch (this.state) {
      case S.STRING:
        if (c === QUOTE) return this.endValue(this.stringIsKey);
        if (c === 92) this.state = S.ESCAPE;
        else if (c < 0x20) return this.fail('a control character inside a string (escape it)');
        return null;
      case S.ESCAPE:
        if (c === 117) {
          this.state = S.UNICODE;
          this.hexLeft = 4;
          return null;
        }
        if (c === QUOTE || c === 92 || c === 47 || c === 98 || c === 102 || c === 110 || c === 114 || c === 116) {
          this.state = S.STRING;
          return null;
        }
        return this.fail('an invalid escape in a string');
      case S.UNICODE:
        if (!isHex(c)) return this.fail('\\u must be followed by four hex digits');
        if (--this.hexLeft === 0) this.state = S.STRING;
        return null;
      case S.LITERAL:
        if (c !== this.literal.charCodeAt(this.literalAt)) return this.fail(`invalid literal (expected ${this.literal})`);
        if (++this.literalAt === this.literal.length) return this.endValue(false);
        return null;
      case S.NUMBER:
        return this.number(c);
      default:
        return this.structural(c);
    }
  }

  private number(c: number): Problem | null {
    switch (this.num) {
      case 0:
        if (c === 48) this.num = 1;
        else if (isDigit(c)) this.num = 2;
        else return this.fail('a digit must follow "-"');
        return null;
      case 1:
      case 2:
        if (isDigit(c)) {
          if (this.num === 1) return this.fail('numbers cannot have leading zeros');
          return null;
        }
        if (c === 46) {
          this.num = 3;
          return null;
        }
        if (c === 101 || c === 69) {
          this.num = 5;
          return null;
        }
        break;
      case 3:
        if (!isDigit(c)) return this.fail('a digit must follow the decimal point');
        this.num = 4;
        return null;
      case 4:
        if (isDigit(c)) return null;
        if (c === 101 || c === 69) {
          this.num = 5;
          return null;
        }
        break;
      case 5:
      case 6:
        if (this.num === 5 && (c === 43 || c === 45)) {
          this.num = 6;
          return null;
        }
        if (!isDigit(c)) return this.fail('a digit must follow the exponent');
        this.num = 7;
        return null;
      case 7:
        if (isDigit(c)) return null;
        break;
    }
    // The number ended before this character, which belongs to what follows.
    const problem = this.endValue(false);
    return problem ?? this.char(c);
  }

  private structural(c: number): Problem | null {
    if (isWs(c)) {
      if (this.state === S.TOP_AFTER && (c === LF || c === CR)) this.sawNewlineAfterValue = true;
      return null;
    }
    switch (this.state) {
      case S.TOP_AFTER:
        if (!this.sawNewlineAfterValue) return this.fail('more after the JSON value on the same line (NDJSON has one value per line)');
        if (this.multiline !== null) return { line: this.multiline, reason: 'an NDJSON value spans several lines' };
        this.valueLine = this.line;
        this.state = S.VALUE;
        return this.startValue(c);
      case S.VALUE:
        return this.startValue(c);
      case S.ARRAY_FIRST:
        if (c === 93) return this.close();
        return this.startValue(c);
      case S.OBJECT_FIRST:
      case S.KEY:
        if (this.state === S.OBJECT_FIRST && c === 125) return this.close();
        if (c !== QUOTE) return this.fail('expected a "quoted" member name');
        this.state = S.STRING;
        this.stringIsKey = true;
        return null;
      case S.COLON:
        if (c !== 58) return this.fail('expected ":" after a member name');
        this.state = S.VALUE;
        return null;
      case S.AFTER: {
        const top = this.stack[this.stack.length - 1];
        if (c === 44) {
          this.state = top === OBJECT ? S.KEY : S.VALUE;
          return null;
        }
        if ((c === 93 && top === ARRAY) || (c === 125 && top === OBJECT)) return this.close();
        return this.fail(top === OBJECT ? 'expected "," or "}"' : 'expected "," or "]"');
      }
      default:
        return this.fail('unexpected character');
    }
  }

  private startValue(c: number): Problem | null {
    if (this.stack.length === 0 && this.values === 0 && this.state === S.VALUE) this.valueLine = this.line;
    switch (c) {
      case 123:
      case 91:
        if (this.stack.length >= MAX_JSON_DEPTH) return this.fail(`nested deeper than ${MAX_JSON_DEPTH} levels`);
        this.stack.push(c === 123 ? OBJECT : ARRAY);
        this.state = c === 123 ? S.OBJECT_FIRST : S.ARRAY_FIRST;
        return null;
      case QUOTE:
        this.state = S.STRING;
        this.stringIsKey = false;
        return null;
      case 116:
      case 102:
      case 110:
        this.literal = c === 116 ? 'true' : c === 102 ? 'false' : 'null';
        this.literalAt = 1;
        this.state = S.LITERAL;
        return null;
      case 45:
        this.num = 0;
        this.state = S.NUMBER;
        return null;
      default:
        if (isDigit(c)) {
          this.num = c === 48 ? 1 : 2;
          this.state = S.NUMBER;
          return null;
        }
        return this.fail('expected a JSON value');
    }
  }

  private close(): Problem | null {
    this.stack.pop();
    return this.endValue(false);
  }

  /** A value (or a member name) has just ended. */
  private endValue(isKey: boolean): Problem | null {
    if (isKey) {
      this.state = S.COLON;
      return null;
    }
    if (this.stack.length > 0) {
      this.state = S.AFTER;
      return null;
    }
    this.values++;
    if (this.line !== this.valueLine) this.multiline ??= this.valueLine;
    if (this.values > 1 && this.multiline !== null) return { line: this.multiline, reason: 'an NDJSON value spans several lines' };
    this.state = S.TOP_AFTER;
    this.sawNewlineAfterValue = false;
    return null;
  }

  end(): Problem | null {
    if (this.state === S.NUMBER) {
      const problem = this.number(32);
      if (problem) return problem;
    }
    if (this.state === S.TOP_AFTER) return null;
    if (this.values === 0 && this.state === S.VALUE && this.stack.length === 0) return { line: this.line, reason: 'no JSON value' };
    return this.fail('the JSON ends in the middle of a value');
  }
}

/** Checks a file's bytes as they stream by; reads the whole input unless it finds a problem. */
export async function checkSchema(bytes: AsyncIterable<Uint8Array>, limits: SchemaLimits = DEFAULT_SCHEMA_LIMITS): Promise<SchemaVerdict> {
  const decoder = new Utf8Decoder();
  let checker: Checker | null = null;
  let line = 1; // lines before the checker was chosen (leading blank lines)
  const run = (text: string): Problem | null => {
    if (checker === null) {
      const first = /[^\s]/.exec(text);
      if (!first) {
        line += (text.match(/\r\n|\r|\n/g) ?? []).length;
        return null;
      }
      checker = text[first.index] === '{' || text[first.index] === '[' ? new JsonChecker() : new CsvChecker(limits);
      const lead = text.slice(0, first.index);
      if (checker instanceof CsvChecker) {
        // Leading blank lines in front of a CSV header are not allowed: the header is line 1.
        if (line > 1 || /[\r\n]/.test(lead)) return { line: 1, reason: 'the file starts with a blank line instead of the header row' };
        return checker.feed(text);
      }
      const problem = checker.feed(text);
      return problem ? { ...problem, line: problem.line + line - 1 } : null;
    }
    const problem = checker.feed(text);
    return problem && checker instanceof JsonChecker ? { ...problem, line: problem.line + line - 1 } : problem;
  };
  const verdict = (problem: Problem): SchemaVerdict => ({ ok: false, format: checker?.format ?? null, ...problem });
  for await (const chunk of bytes) {
    const { text, invalid } = decoder.decode(chunk);
    const problem = run(text);
    if (problem) return verdict(problem);
    if (invalid) return verdict({ line: currentLine(checker, line), reason: 'not valid UTF-8' });
  }
  const tail = decoder.end();
  const problem = run(tail.text);
  if (problem) return verdict(problem);
  if (tail.invalid) return verdict({ line: currentLine(checker, line), reason: 'not valid UTF-8 (the input ends inside a character)' });
  if (checker === null) return { ok: false, format: null, line: 1, reason: 'the file is empty' };
  const c = checker as Checker;
  const last = c.end();
  if (last) return verdict(c instanceof JsonChecker ? { ...last, line: last.line + line - 1 } : last);
  return { ok: true, format: c.format, records: c.records };
}

function currentLine(checker: Checker | null, before: number): number {
  if (checker === null) return before;
  return checker instanceof JsonChecker ? checker.line + before - 1 : checker.line;
}
