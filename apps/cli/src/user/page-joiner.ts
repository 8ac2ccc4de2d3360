/**
 * Joins the pages of a download into the one file an uninterrupted download would be.
 * CSV: the header once (each page repeats it). JSON: each page is an array of one object per
 * line (`[`, `{…}`, `,{…}`, …, `]`); the file is one array in that same layout, so a download
 * that fits one page is byte for byte the api's answer. `rowsBefore` (rows already in the file)
 * decides the first page's header or `[` and the commas.
 */
export class PageJoiner {
  private rest = '';
  private firstLine = true;
  /** Data rows of this page seen so far. */
  rows = 0;

  private readonly format: 'csv' | 'json';
  private readonly rowsBefore: number;
  private readonly fileIsEmpty: boolean;

  constructor(format: 'csv' | 'json', rowsBefore: number, fileIsEmpty: boolean) {
    this.format = format;
    this.rowsBefore = rowsBefore;
    this.fileIsEmpty = fileIsEmpty;
  }

  /** The text to append for the next piece of the page. */
  push(text: string): string {
    const lines = (this.rest + text).split('\n');
    this.rest = lines.pop()!;
    return lines.map((l) => this.line(l)).join('');
  }

  /** The text to append at the page's end (a last line without its newline). */
  end(): string {
    const last = this.rest;
    this.rest = '';
    return last === '' ? '' : this.line(last);
  }

  private line(line: string): string {
    const first = this.firstLine;
    this.firstLine = false;
    if (this.format === 'csv') {
      if (first) return this.fileIsEmpty ? `${line}\n` : '';
      this.rows++;
      return `${line}\n`;
    }
    if (line === '[' || line === ']' || line === '[]' || line === '') return first && this.fileIsEmpty ? '[\n' : '';
    const object = line.startsWith(',') ? line.slice(1) : line;
    const lead = (first && this.fileIsEmpty ? '[\n' : '') + (this.rowsBefore + this.rows > 0 ? ',' : '');
    this.rows++;
    return `${lead}${object}\n`;
  }
}

/** What closes a finished download's file: JSON's `]` (and its `[` when no page gave one). */
export function closing(format: 'csv' | 'json', fileIsEmpty: boolean): string {
  if (format === 'csv') return '';
  return fileIsEmpty ? '[\n]\n' : ']\n';
}
