import { DomainError, type FieldError } from '../errors.ts';
import { END_TIMESTAMP_MS, MIN_TIMESTAMP_MS, parseTimestamp } from '../points/timestamp.ts';

export type Pattern = 'single' | 'list' | 'contains' | 'starts_with' | 'ends_with';
export const PATTERNS: readonly Pattern[] = ['single', 'list', 'contains', 'starts_with', 'ends_with'];
/** csv and json are text for reading and spreadsheets; arrow (an IPC stream) and parquet are typed columns for data frames. */
export type DownloadFormat = 'csv' | 'json' | 'arrow' | 'parquet';
export const DOWNLOAD_FORMATS: readonly DownloadFormat[] = ['csv', 'json', 'arrow', 'parquet'];

/** raw: every stored row; 1m, 1h: per metric and bucket, the aggregates of the deduplicated points (the rollups). */
export type Resolution = 'raw' | '1m' | '1h';
export const RESOLUTIONS: readonly Resolution[] = ['raw', '1m', '1h'];

export type DownloadParams = {
  readonly metrics: string;
  readonly pattern: Pattern;
  /** Inclusive bounds, epoch milliseconds. */
  readonly fromMs: number;
  readonly toMs: number;
  readonly maxRows: number;
  readonly format: DownloadFormat;
  readonly latestOnly: boolean;
  readonly resolution: Resolution;
  /** The opaque continuation token, still encoded; the query side decodes it. */
  readonly cursor: string | null;
};

export const DEFAULT_MAX_ROWS = 1000;
const DAY_MS = 86_400_000;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * A download bound: `YYYY-MM-DD` (a whole UTC day: its first millisecond for a start, its
 * last for an end) or a full ISO 8601 date-time with an offset (`Z`, `+hh:mm`, `+hhmm`).
 */
export function parseDateBound(text: string, bound: 'start' | 'end'): { ok: true; ms: number } | { ok: false; reason: string } {
  const day = DATE_ONLY.exec(text);
  if (day) {
    const [y, m, d] = [Number(day[1]), Number(day[2]), Number(day[3])];
    // Not Date.UTC(y, ...): it reads years 0 to 99 as 1900 to 1999.
    const back = new Date(0);
    back.setUTCFullYear(y, m - 1, d);
    const ms = back.getTime();
    if (back.getUTCFullYear() !== y || back.getUTCMonth() !== m - 1 || back.getUTCDate() !== d) return { ok: false, reason: 'not a calendar date' };
    if (ms < MIN_TIMESTAMP_MS || ms >= END_TIMESTAMP_MS) return { ok: false, reason: 'outside 1970-01-01 to 2105-12-31' };
    return { ok: true, ms: bound === 'start' ? ms : ms + DAY_MS - 1 };
  }
  const parsed = parseTimestamp(text);
  return parsed.ok ? parsed : { ok: false, reason: `expected YYYY-MM-DD or an ISO 8601 date-time with an offset: ${parsed.reason}` };
}

export type RawDownloadQuery = Readonly<Record<string, string | string[] | undefined>>;

/**
 * maxRowsCeiling: MERIDIAN_MAX_ROWS_CEILING; maxListNames: MERIDIAN_MAX_DOWNLOAD_NAMES;
 * maxRollupRows: MERIDIAN_MAX_ROLLUP_ROWS, the page of a download at a resolution (held in the api).
 */
export type DownloadLimits = { readonly maxRowsCeiling: number; readonly maxListNames: number; readonly maxRollupRows: number };

/**
 * Reads a download-like query (a download, a sampled series), noting each problem by field in
 * `errors`: one value per name, the metrics and their pattern, a date bound. The parsers of
 * those queries read through it, so they take and refuse the same text alike.
 */
export function queryReader(query: RawDownloadQuery, errors: FieldError[]) {
  const one = (name: string): string | undefined => {
    const v = query[name];
    if (Array.isArray(v)) {
      errors.push({ field: name, reason: 'given more than once' });
      return undefined;
    }
    return v;
  };
  /** The metrics text and its pattern (single by default); a list longer than `maxListNames` is named with `tooLong`. */
  const selection = (maxListNames: number, tooLong: string): { metrics: string | undefined; pattern: Pattern | null } => {
    const metrics = one('metrics');
    if (metrics === undefined || metrics.length === 0)
      errors.push({ field: 'metrics', reason: 'required: a metric name, a comma-separated list, or the text a pattern applies to' });
    const patternText = one('pattern') ?? 'single';
    const pattern = (PATTERNS as readonly string[]).includes(patternText) ? (patternText as Pattern) : null;
    if (!pattern) errors.push({ field: 'pattern', reason: `must be one of ${PATTERNS.join(', ')}` });
    // Counted on the text, before any lookup: the catalog query and the external data grow with it.
    if (pattern === 'list' && metrics && countListNames(metrics) > maxListNames)
      errors.push({ field: 'metrics', reason: `names more than ${maxListNames} metrics ${tooLong}` });
    return { metrics, pattern };
  };
  /** start_date or end_date in epoch milliseconds; null when left out or invalid. */
  const dateBound = (name: 'start_date' | 'end_date'): number | null => {
    const text = one(name);
    if (text === undefined || text === '') return null;
    const parsed = parseDateBound(text, name === 'start_date' ? 'start' : 'end');
    if (!parsed.ok) {
      errors.push({ field: name, reason: parsed.reason });
      return null;
    }
    return parsed.ms;
  };
  return { one, selection, dateBound };
}

/** Validates the seed's download parameters; every problem is reported at once, by parameter. */
export function parseDownloadParams(query: RawDownloadQuery, limits: DownloadLimits): DownloadParams {
  const { maxRowsCeiling } = limits;
  const errors: FieldError[] = [];
  const { one, selection, dateBound } = queryReader(query, errors);
  const { metrics, pattern } = selection(limits.maxListNames, '(MERIDIAN_MAX_DOWNLOAD_NAMES); split the list into several downloads');
  const fromMs = dateBound('start_date') ?? MIN_TIMESTAMP_MS;
  const toMs = dateBound('end_date') ?? END_TIMESTAMP_MS - 1;
  if (fromMs > toMs) errors.push({ field: 'start_date', reason: 'is after end_date' });

  const maxRowsText = one('max_rows');
  let maxRows = DEFAULT_MAX_ROWS;
  if (maxRowsText !== undefined) {
    if (!/^\d+$/.test(maxRowsText) || Number(maxRowsText) < 1) errors.push({ field: 'max_rows', reason: `must be a whole number from 1 to ${maxRowsCeiling}` });
    else if (Number(maxRowsText) > maxRowsCeiling)
      errors.push({ field: 'max_rows', reason: `must be at most ${maxRowsCeiling}; page through larger results with the cursor` });
    else maxRows = Number(maxRowsText);
  }

  // The seed documents file_format; its sample request sends format. Both are accepted.
  const fileFormat = one('file_format');
  const alias = one('format');
  if (fileFormat !== undefined && alias !== undefined && fileFormat !== alias) errors.push({ field: 'format', reason: 'disagrees with file_format' });
  const formatText = fileFormat ?? alias ?? 'csv';
  const format = (DOWNLOAD_FORMATS as readonly string[]).includes(formatText) ? (formatText as DownloadFormat) : null;
  if (!format) errors.push({ field: fileFormat !== undefined ? 'file_format' : 'format', reason: `must be one of ${DOWNLOAD_FORMATS.join(', ')}` });

  const latestText = one('latest_only') ?? 'false';
  if (latestText !== 'true' && latestText !== 'false') errors.push({ field: 'latest_only', reason: 'must be true or false' });

  const resolutionText = one('resolution') ?? 'raw';
  const resolution = (RESOLUTIONS as readonly string[]).includes(resolutionText) ? (resolutionText as Resolution) : null;
  if (!resolution) errors.push({ field: 'resolution', reason: `must be one of ${RESOLUTIONS.join(', ')}` });
  else if (resolution !== 'raw' && maxRows > limits.maxRollupRows) {
    errors.push({
      field: 'max_rows',
      reason: `must be at most ${limits.maxRollupRows} with resolution ${resolution} (MERIDIAN_MAX_ROLLUP_ROWS); page through larger results with the cursor`,
    });
  }

  const cursor = one('cursor') ?? null;

  if (errors.length > 0) {
    throw new DomainError('validation', `invalid download parameters: ${errors.map((e) => `${e.field} ${e.reason}`).join('; ')}`, errors);
  }
  return { metrics: metrics!, pattern: pattern!, fromMs, toMs, maxRows, format: format!, latestOnly: latestText === 'true', resolution: resolution!, cursor };
}

function countListNames(list: string): number {
  let n = 1;
  for (let i = list.indexOf(','); i !== -1; i = list.indexOf(',', i + 1)) n++;
  return n;
}
