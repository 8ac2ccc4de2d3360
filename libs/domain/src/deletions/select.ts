import { canRead, canWrite } from '../accounts/access.ts';
import type { UserRecord } from '../accounts/state.ts';
import { DomainError, forbidden, type FieldError } from '../errors.ts';
import { queryReader, type Pattern, type RawDownloadQuery } from '../downloads/params.ts';
import { resolveMetricNames } from '../downloads/resolve.ts';

/** What a deletion selects, as its request says it: the download's selection, both bounds, and why. */
export type DeletionRequest = {
  readonly pattern: Pattern;
  readonly metrics: string;
  /** Inclusive bounds, epoch milliseconds. */
  readonly fromMs: number;
  readonly toMs: number;
  readonly reason: string;
};

/**
 * Most bytes of metric names one deletion carries (its events hold them all, and a Kafka record
 * has a size limit): a selection past it is refused, and retention splits its deletions by it.
 */
export const MAX_DELETION_NAME_BYTES = 256 * 1024;

/** The names in runs of at most `maxBytes` (UTF-8) each, in order; a longer name is a run of its own. */
export function nameRuns(names: readonly string[], maxBytes: number): string[][] {
  const runs: string[][] = [];
  let run: string[] = [];
  let bytes = 0;
  for (const name of names) {
    const size = Buffer.byteLength(name, 'utf8');
    if (run.length > 0 && bytes + size > maxBytes) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(name);
    bytes += size;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** Longest reason kept in the log (characters). */
export const MAX_DELETION_REASON = 1000;

/**
 * Reads a deletion's parameters with the download's own reader (the same names, patterns and
 * date forms). Both bounds are required: a deletion of a metric's whole history is asked for
 * in so many words, never by leaving a bound out.
 */
export function parseDeletionRequest(query: RawDownloadQuery, maxListNames: number): DeletionRequest {
  const errors: FieldError[] = [];
  const { one, selection, dateBound } = queryReader(query, errors);
  const { metrics, pattern } = selection(maxListNames, '(MERIDIAN_MAX_DOWNLOAD_NAMES); split the list into several deletions');
  const fromMs = dateBound('start_date');
  const toMs = dateBound('end_date');
  if (one('start_date') === undefined) errors.push({ field: 'start_date', reason: 'required' });
  if (one('end_date') === undefined) errors.push({ field: 'end_date', reason: 'required' });
  if (fromMs !== null && toMs !== null && fromMs > toMs) errors.push({ field: 'start_date', reason: 'is after end_date' });
  const reason = (one('reason') ?? '').trim();
  if (reason.length === 0) errors.push({ field: 'reason', reason: 'required: say why, it is kept in the log' });
  else if (reason.length > MAX_DELETION_REASON) errors.push({ field: 'reason', reason: `at most ${MAX_DELETION_REASON} characters` });
  if (errors.length > 0) throw new DomainError('validation', `invalid deletion: ${errors.map((e) => `${e.field} ${e.reason}`).join('; ')}`, errors);
  return { pattern: pattern!, metrics: metrics!, fromMs: fromMs!, toMs: toMs!, reason };
}

/**
 * The metrics a deletion reaches. Exact names (single, list) that do not exist or that the
 * caller may not read are the download's 404; a name the caller may read and not write is 403.
 * A substring pattern reaches the metrics the caller may write, and may reach none.
 */
export function resolveDeletionNames(request: Pick<DeletionRequest, 'pattern' | 'metrics'>, catalog: Iterable<string>, user: UserRecord): string[] {
  const exact = request.pattern === 'single' || request.pattern === 'list';
  const names = resolveMetricNames(request.pattern, request.metrics, catalog, exact ? (n) => canRead(user, n) : (n) => canWrite(user, n));
  if (exact && names.some((n) => !canWrite(user, n))) throw forbidden('you may read this metric but not write it: deleting points needs rw');
  return names;
}
