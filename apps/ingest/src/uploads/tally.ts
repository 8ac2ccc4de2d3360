import type { RowError } from '@meridian/domain';

export const MAX_REPORTED_ERRORS = 100;

/**
 * Counts an upload's rows and keeps its first errors. Pure bookkeeping, so the rules
 * (what counts as a rejected row, how many errors are reported) are tested without I/O.
 */
export class UploadTally {
  points = 0;
  private readonly rejectedRows = new Set<number>();
  private suppressed = 0;
  private fatalSeen = false;
  readonly errors: RowError[] = [];

  point(): void {
    this.points++;
  }

  /** Row 0 means the upload as a whole (unreadable JSON, no metric name): it cannot be skipped. */
  error(row: number, column: string, reason: string): void {
    if (row > 0) this.rejectedRows.add(row);
    else this.fatalSeen = true;
    if (this.errors.length < MAX_REPORTED_ERRORS) this.errors.push({ row, column, reason });
    else this.suppressed++;
  }

  get rejected(): number {
    return this.rejectedRows.size;
  }

  get rowsTotal(): number {
    return this.points + this.rejected;
  }

  get hasFatal(): boolean {
    return this.fatalSeen;
  }

  /** The reported errors, with a last line counting the ones not shown. */
  report(): RowError[] {
    return this.suppressed > 0 ? [...this.errors, { row: -1, column: 'row', reason: `${this.suppressed} more errors not shown` }] : [...this.errors];
  }
}
