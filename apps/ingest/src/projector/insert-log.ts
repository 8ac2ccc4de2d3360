import type { Logger } from '@meridian/observability';

/**
 * Insert statistics, logged at info at most once per `everyMs` (not once per insert or
 * message): inserts, rows and milliseconds spent in ClickHouse since the last line.
 */
export class InsertLog {
  private inserts = 0;
  private rows = 0;
  private ms = 0;
  private last: number;
  private readonly logger: Logger;
  private readonly everyMs: number;
  private readonly now: () => number;

  constructor(logger: Logger, everyMs = 1000, now: () => number = Date.now) {
    this.logger = logger;
    this.everyMs = everyMs;
    this.now = now;
    this.last = now() - everyMs;
  }

  record(rows: number, ms: number): void {
    this.inserts++;
    this.rows += rows;
    this.ms += ms;
    if (this.now() - this.last >= this.everyMs) this.flush();
  }

  /** Logs what has accumulated, if anything. */
  flush(): void {
    if (this.inserts === 0) return;
    this.logger.info(
      { inserts: this.inserts, rows: this.rows, insert_ms: Math.round(this.ms), rows_per_s: this.ms > 0 ? Math.round((this.rows * 1000) / this.ms) : null },
      'points inserted',
    );
    this.inserts = 0;
    this.rows = 0;
    this.ms = 0;
    this.last = this.now();
  }
}
