import type { UserRecord } from '../accounts/state.ts';
import type { RowError } from '../tasks/events.ts';
import type { BatchBounds } from './batch-bytes.ts';
import { PointBatcher } from './batcher.ts';
import type { OnError } from './events.ts';

/** Errors a task reports in full; the rest are counted in one last line. An all-or-nothing upload stops being read at this many. */
export const MAX_REPORTED_ERRORS = 100;
/** Metrics an UploadParsed names (the first, sorted): the task's result stays small whatever the file holds. */
export const MAX_LISTED_METRICS = 1000;

/**
 * reading → read (the whole input was read and the upload holds: the caller seals it) or
 * failed (nothing of it may become visible). A read upload can still fail at a limit of the
 * caller's (its time budget) until it is sealed; a failed one takes no more input.
 */
export type UploadStatus = 'reading' | 'read' | 'failed';

/** What starts a run: the command's choice of error policy and how to ask about the uploader's account. */
export type UploadStart = {
  readonly on_error: OnError;
  /**
   * The uploader's record in the accounts fold as it is now (undefined: unknown). Asked at the
   * first row of each metric; the answer holds for the rest of the upload.
   */
  readonly user: () => UserRecord | undefined;
  /** Where a PointBatch is cut (its points, its bytes), and most points held across metrics before the largest batch goes out. */
  readonly batch: BatchBounds;
  readonly maxBufferedPoints: number;
  /** The points partition of a metric: batches then hold one partition's metrics. Absent: one metric a batch. */
  readonly groupOf?: (metricName: string) => number;
};

/**
 * The run of one upload. Changed in place by decideUpload, unlike the account and file
 * states: an upload feeds it millions of points, and a copy per point would cost more than
 * parsing them. Its memory does not grow with the rows: errors past the reported ones are only
 * counted, and a row with several errors is recognised by the last rejected row alone (errors
 * come in row order, as the parser reads front to back).
 */
export type UploadRun = {
  status: UploadStatus;
  readonly start: UploadStart;
  /** Each metric's write access, decided at its first row. */
  readonly writable: Map<string, boolean>;
  readonly batcher: PointBatcher;
  points: number;
  rejectedRows: number;
  lastRejectedRow: number;
  readonly errors: RowError[];
  /** Errors past MAX_REPORTED_ERRORS: counted, not kept. */
  suppressed: number;
  /** The first error of the upload as a whole (row 0): it cannot be skipped. */
  fatal: string | null;
};

export function startUpload(start: UploadStart): UploadRun {
  return {
    status: 'reading',
    start,
    writable: new Map(),
    batcher: new PointBatcher(start.batch, start.maxBufferedPoints, start.groupOf),
    points: 0,
    rejectedRows: 0,
    lastRejectedRow: 0,
    errors: [],
    suppressed: 0,
    fatal: null,
  };
}

/** Rows read so far, valid or not: the task's progress. */
export function rowsRead(run: UploadRun): number {
  return run.points + run.rejectedRows;
}

/** The reported errors, with a last line counting the ones not shown. */
export function reportedErrors(run: UploadRun): RowError[] {
  return run.suppressed > 0 ? [...run.errors, { row: -1, column: 'row', reason: `${run.suppressed} more errors not shown` }] : [...run.errors];
}

/** The metrics the upload was allowed to write, sorted, the first MAX_LISTED_METRICS. */
export function writtenMetrics(run: UploadRun): string[] {
  return [...run.writable]
    .filter(([, ok]) => ok)
    .map(([m]) => m)
    .sort()
    .slice(0, MAX_LISTED_METRICS);
}
