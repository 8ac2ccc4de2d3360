import { canWrite } from '../accounts/access.ts';
import type { UploadItem } from './parse.ts';
import type { RowError } from '../tasks/events.ts';
import type { ColumnBatch } from './batcher.ts';
import { MAX_REPORTED_ERRORS, reportedErrors, rowsRead, writtenMetrics, type UploadRun, type UploadStatus } from './state.ts';

/**
 * What the caller feeds one upload's run: the parser's items a chunk at a time (points, row
 * errors, errors of the whole upload at row 0; the parser counts nothing itself, so it is
 * asked for every error), the end of the input, or a limit of the caller's own (decompressed
 * size, expansion ratio, time budget) that stopped it.
 */
export type UploadInput =
  | { readonly type: 'ItemsParsed'; readonly items: readonly UploadItem[] }
  | { readonly type: 'InputEnded' }
  | { readonly type: 'LimitReached'; readonly reason: string };

/** What the upload is complete with: the caller seals it (its batches, the seals and these counts in one transaction). */
export type UploadComplete = {
  readonly type: 'UploadComplete';
  readonly rows_total: number;
  readonly points_accepted: number;
  readonly rows_rejected: number;
  readonly errors: readonly RowError[];
  readonly metrics: readonly string[];
};

/** Nothing of the upload may become visible: the caller abandons its batches and fails the task with this. */
export type UploadFailed = {
  readonly type: 'UploadFailed';
  readonly reason: string;
  readonly rows_total: number;
  readonly rows_rejected: number;
  readonly errors: readonly RowError[];
};

/**
 * The facts of a run, in the order the caller acts on them: point batches to send (within the
 * upload's transaction), then at most one end, complete or failed, after which it takes no input.
 */
export type UploadFact = { readonly type: 'BatchReady'; readonly batch: ColumnBatch } | UploadComplete | UploadFailed;

/** Which inputs each status takes; anything else is a caller's bug and throws. */
const accepts: Record<UploadStatus, ReadonlySet<UploadInput['type']>> = {
  reading: new Set(['ItemsParsed', 'InputEnded', 'LimitReached']),
  read: new Set(['LimitReached']),
  failed: new Set(),
};

/** What most chunks decide: one shared empty list, not a new one per chunk. */
const NONE: readonly UploadFact[] = Object.freeze([]);

/**
 * The rules of one upload's run:
 *
 * - all or nothing (on_error=fail): one invalid row fails the upload and nothing is stored;
 *   it is read on to count the invalid rows (its points only counted from the first error on)
 *   and stops at its MAX_REPORTED_ERRORS-th error, saying so (the counts are then a floor);
 * - on_error=skip reads to the end, keeps the valid rows and reports the rejected ones;
 * - an error of the upload as a whole (row 0: unreadable JSON, no metric name, invalid UTF-8)
 *   fails it whatever on_error says;
 * - the first name the uploader may not write fails it whatever on_error says, naming the row:
 *   write access is decided once per metric, at its first row, on the accounts fold (an unknown
 *   or disabled user may write nothing), so a change during the upload cannot split a metric;
 * - a row counts once however many errors it has; the first MAX_REPORTED_ERRORS errors are
 *   kept, the rest counted in a last line.
 */
export function decideUpload(run: UploadRun, input: UploadInput): readonly UploadFact[] {
  if (!accepts[run.status].has(input.type)) throw new Error(`an upload that is ${run.status} takes no ${input.type}`);
  switch (input.type) {
    case 'ItemsParsed':
      return decideItems(run, input.items);
    case 'InputEnded':
      return decideEnd(run);
    case 'LimitReached':
      recordError(run, 0, 'row', input.reason);
      return [failed(run, input.reason)];
    default: {
      const never: never = input;
      throw new Error(`unknown upload input ${JSON.stringify(never)}`);
    }
  }
}

function decideItems(run: UploadRun, items: readonly UploadItem[]): readonly UploadFact[] {
  const allOrNothing = run.start.on_error === 'fail';
  let facts: UploadFact[] | null = null;
  const end = (fact: UploadFailed) => [...(facts ?? []), fact];
  for (const item of items) {
    if (item.kind === 'point') {
      if (!mayWrite(run, item.metric_name)) {
        // No row error to skip: a name the uploader may not write fails the whole upload.
        recordError(run, item.row, 'metric_name', 'no write access to this metric');
        return end(failed(run, `row ${item.row}: no write access to the metric ${JSON.stringify(item.metric_name)}; the upload was not stored`));
      }
      run.points++;
      // Once an all-or-nothing upload has an error, its points are only counted.
      if (allOrNothing && run.errors.length > 0) continue;
      const full = run.batcher.add(item.metric_name, item.ts, item.value);
      for (const batch of full) (facts ??= []).push({ type: 'BatchReady', batch });
    } else if (item.kind === 'error') {
      recordError(run, item.row, item.column, item.reason);
      if (run.fatal !== null) return end(failed(run, `the upload cannot be read: ${run.fatal}; nothing was stored`));
      if (allOrNothing && run.errors.length >= MAX_REPORTED_ERRORS) {
        return end(
          failed(
            run,
            `reading stopped after row ${run.lastRejectedRow}, at the first ${run.errors.length} errors: at least ${run.rejectedRows} invalid rows; nothing was stored`,
          ),
        );
      }
    }
  }
  return facts ?? NONE;
}

function decideEnd(run: UploadRun): readonly UploadFact[] {
  if (run.start.on_error === 'fail' && run.errors.length > 0) return [failed(run, `${run.rejectedRows} invalid rows: nothing was stored`)];
  run.status = 'read';
  const facts: UploadFact[] = run.batcher.drain().map((batch) => ({ type: 'BatchReady', batch }));
  facts.push({
    type: 'UploadComplete',
    rows_total: rowsRead(run),
    points_accepted: run.points,
    rows_rejected: run.rejectedRows,
    errors: reportedErrors(run),
    metrics: writtenMetrics(run),
  });
  return facts;
}

function mayWrite(run: UploadRun, metric: string): boolean {
  let ok = run.writable.get(metric);
  if (ok === undefined) {
    const user = run.start.user();
    ok = user !== undefined && user.disabled_at === null && canWrite(user, metric);
    run.writable.set(metric, ok);
  }
  return ok;
}

/** Row 0 (or below) is the upload as a whole: such an error is fatal, and no rejected row. */
function recordError(run: UploadRun, row: number, column: string, reason: string): void {
  if (row > 0) {
    if (row < run.lastRejectedRow) throw new Error(`row ${row} reported after row ${run.lastRejectedRow}: errors must come in row order`);
    if (row !== run.lastRejectedRow) run.rejectedRows++;
    run.lastRejectedRow = row;
  } else {
    run.fatal = column === 'row' ? reason : `${column}: ${reason}`;
  }
  if (run.errors.length < MAX_REPORTED_ERRORS) run.errors.push({ row, column, reason });
  else run.suppressed++;
}

function failed(run: UploadRun, reason: string): UploadFailed {
  run.status = 'failed';
  return { type: 'UploadFailed', reason, rows_total: rowsRead(run), rows_rejected: run.rejectedRows, errors: reportedErrors(run) };
}
