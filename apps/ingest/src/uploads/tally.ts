import type { RowError } from '@meridian/domain';

export const MAX_REPORTED_ERRORS = 100;

/**
 * Counts an upload's rows and keeps its first errors. Pure bookkeeping, so the rules
 * (what counts as a rejected row, how many errors are reported) are tested without I/O.
 * Errors arrive in row order (the parser reads the upload front to back), so a row with
 * several errors is counted once by remembering only the last rejected row: memory stays
 * flat however many rows an on_error=skip upload rejects.
 */
export class UploadTally {
  points = 0;
  private rejectedRows = 0;
  private lastRejectedRow = 0;
  private suppressed = 0;
  private fatalReason: string | null = null; // the first error of the whole upload
  private stopped = false;
  readonly errors: RowError[] = [];

  point(): void {
    this.points++;
  }

  /** Row 0 means the upload as a whole (unreadable JSON, no metric name): it cannot be skipped. */
  error(row: number, column: string, reason: string): void {
    if (row > 0) {
      if (row < this.lastRejectedRow) throw new Error(`row ${row} reported after row ${this.lastRejectedRow}: errors must come in row order`);
      if (row !== this.lastRejectedRow) this.rejectedRows++;
      this.lastRejectedRow = row;
    } else {
      this.fatalReason ??= column === 'row' ? reason : `${column}: ${reason}`;
    }
    if (this.errors.length < MAX_REPORTED_ERRORS) this.errors.push({ row, column, reason });
    else this.suppressed++;
  }

  /** An all-or-nothing upload stops being read once it has as many errors as are reported. */
  get shouldStopReading(): boolean {
    return this.errors.length >= MAX_REPORTED_ERRORS;
  }

  /** Reading stopped before the end: the counts cover the rows read, not the whole upload. */
  stopReading(): void {
    this.stopped = true;
  }

  get rejected(): number {
    return this.rejectedRows;
  }

  get rowsTotal(): number {
    return this.points + this.rejected;
  }

  get hasFatal(): boolean {
    return this.fatalReason !== null;
  }

  /** Why an upload with these errors stored nothing. */
  failureReason(): string {
    if (this.fatalReason !== null) return `the upload cannot be read: ${this.fatalReason}; nothing was stored`;
    if (this.stopped) return `reading stopped after row ${this.lastRejectedRow}, at the first ${this.errors.length} errors: at least ${this.rejected} invalid rows; nothing was stored`;
    return `${this.rejected} invalid rows: nothing was stored`;
  }

  /** The reported errors, with a last line counting the ones not shown. */
  report(): RowError[] {
    return this.suppressed > 0 ? [...this.errors, { row: -1, column: 'row', reason: `${this.suppressed} more errors not shown` }] : [...this.errors];
  }
}
