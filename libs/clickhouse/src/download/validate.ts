import { isUuid } from '@meridian/domain';
import { isCursor } from './cursor.ts';
import type { DownloadRequest } from './types.ts';

/**
 * Checks everything that ends up in SQL text (numbers, the query id) or decides its shape.
 * A failure is the caller's bug, not the user's: the api validates user input first.
 */
export function assertValidRequest(req: DownloadRequest): void {
  const problems: string[] = [];
  if (!Array.isArray(req.metricNames) || !req.metricNames.every((n) => typeof n === 'string')) problems.push('metricNames must be strings');
  if (!Number.isSafeInteger(req.fromMs)) problems.push('fromMs must be a safe integer');
  if (!Number.isSafeInteger(req.toMs)) problems.push('toMs must be a safe integer');
  if (!Number.isSafeInteger(req.maxRows) || req.maxRows < 1) problems.push('maxRows must be a positive safe integer');
  if (req.after !== null && !isCursor(req.after)) problems.push('after must be null or a valid cursor');
  if (req.format !== 'csv' && req.format !== 'json' && req.format !== 'columns') problems.push('format must be csv, json or columns');
  if (req.format === 'columns' && req.gzip) problems.push('columns are never gzipped');
  if (req.batchRows !== undefined && !(Number.isSafeInteger(req.batchRows) && req.batchRows > 0)) problems.push('batchRows must be a positive safe integer');
  if (typeof req.latestOnly !== 'boolean') problems.push('latestOnly must be a boolean');
  if (typeof req.gzip !== 'boolean') problems.push('gzip must be a boolean');
  if (!isUuid(req.queryId)) problems.push('queryId must be a UUID');
  if (problems.length > 0) throw new TypeError(`invalid download request: ${problems.join('; ')}`);
}
