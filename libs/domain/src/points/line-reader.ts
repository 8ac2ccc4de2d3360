/**
 * Splits streamed text into physical lines (LF; a CR before it stays in the line) and numbers
 * them from 1. Keeps only the current partial line, at most maxLineLength characters: a
 * longer line is handed over as null (too long), whatever the chunking.
 */

/** The default longest line, in characters. */
export const DEFAULT_MAX_LINE_LENGTH = 65_536;

/** `text` is one line without its LF, or null when the line is longer than the reader's maxLineLength. */
export type LineHandler = (text: string | null, line: number) => void;

export class LineReader {
  /** The physical line the reader is on (1-based): the line of the next character. */
  line = 1;
  private readonly onLine: LineHandler;
  private readonly maxLineLength: number;
  private carry = '';
  private tooLong = false; // the current partial line is already too long; its text is dropped

  constructor(onLine: LineHandler, maxLineLength = DEFAULT_MAX_LINE_LENGTH) {
    this.onLine = onLine;
    this.maxLineLength = maxLineLength;
  }

  feed(text: string): void {
    const max = this.maxLineLength;
    let pos = 0;
    for (;;) {
      const nl = text.indexOf('\n', pos);
      if (nl < 0) break;
      if (this.tooLong) {
        this.onLine(null, this.line);
        this.tooLong = false;
      } else {
        const line = this.carry === '' ? text.slice(pos, nl) : this.carry + text.slice(pos, nl);
        this.carry = '';
        this.onLine(line.length > max ? null : line, this.line);
      }
      this.line++;
      pos = nl + 1;
    }
    if (pos < text.length && !this.tooLong) {
      if (this.carry.length + (text.length - pos) > max) {
        this.tooLong = true;
        this.carry = '';
      } else {
        this.carry += text.slice(pos);
      }
    }
  }

  /** Ends the input: a last line without a final newline is still a line. */
  end(): void {
    if (this.tooLong) this.onLine(null, this.line);
    else if (this.carry !== '') this.onLine(this.carry, this.line);
    this.tooLong = false;
    this.carry = '';
  }
}
