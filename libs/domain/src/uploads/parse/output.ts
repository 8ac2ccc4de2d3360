import type { UploadItem, UploadLayout } from './items.ts';

/**
 * What the parser yields, and its error policy: every error is counted, the first maxErrors
 * are yielded and the rest summed up in one last "N more errors not shown"; a problem that
 * makes the rest meaningless stops the reading (stopped). Points are yielded whatever the
 * errors: the caller decides what an upload with errors stores.
 */
export class UploadOutput {
  stopped = false;
  private items: UploadItem[] = [];
  private errorCount = 0;
  private suppressed = 0;
  private readonly maxErrors: number;

  constructor(maxErrors: number) {
    this.maxErrors = maxErrors;
  }

  /** The items since the last take. */
  take(): UploadItem[] {
    const items = this.items;
    this.items = [];
    return items;
  }

  layout(layout: UploadLayout): void {
    this.items.push({ kind: 'layout', layout });
  }

  point(row: number, metricName: string, ts: number, value: number): void {
    this.items.push({ kind: 'point', row, metric_name: metricName, ts, value });
  }

  error(row: number, column: string, reason: string): void {
    this.errorCount++;
    if (this.errorCount <= this.maxErrors) this.items.push({ kind: 'error', row, column, reason });
    else this.suppressed++;
  }

  /** An error after which nothing more is read. */
  stop(row: number, column: string, reason: string): void {
    this.error(row, column, reason);
    this.stopped = true;
  }

  /** Adds the count of errors that were not yielded, if any. */
  finish(): void {
    if (this.suppressed > 0) {
      const n = this.suppressed;
      this.items.push({ kind: 'error', row: -1, column: 'row', reason: `${n} more ${n === 1 ? 'error' : 'errors'} not shown` });
      this.suppressed = 0;
    }
  }
}
