import type { Context } from 'koa';
import { z } from 'zod';
import {
  DomainError,
  DOWNLOAD_FORMATS,
  PATTERNS,
  RESOLUTIONS,
  validationError,
  type DownloadFormat,
  type FieldError,
  type RawDownloadQuery,
  type Resolution,
} from '@meridian/domain';
import { readBody } from '../uploads/read-body.ts';

/**
 * The parameters of a metrics download as query text: the GET's query string, or a POST's
 * form body. Every value is text, as in a URL.
 */
export const downloadQuerySchema = z.object({
  metrics: z
    .string()
    .describe('A metric name, a comma-separated list of names (pattern=list), or the text a substring pattern applies to. URL-encode special characters.'),
  pattern: z
    .enum(PATTERNS as [string, ...string[]])
    .optional()
    .describe(
      'single (default): exact name; list: each element an exact name you may read; contains / starts_with / ends_with: applied to the metrics you may read',
    ),
  start_date: z.string().optional().describe('Inclusive. YYYY-MM-DD (from 00:00:00 UTC) or an ISO 8601 date-time with Z, +hh:mm or +hhmm'),
  end_date: z.string().optional().describe('Inclusive. YYYY-MM-DD (to the end of that UTC day) or an ISO 8601 date-time'),
  max_rows: z
    .string()
    .optional()
    .describe(
      'Default 1000; at most the configured ceiling (MERIDIAN_MAX_ROWS_CEILING, default 10,000,000). When it cuts the result, X-Next-Cursor (and, on GET, Link rel="next") continue after the last row',
    ),
  file_format: z
    .enum(DOWNLOAD_FORMATS as [DownloadFormat, ...DownloadFormat[]])
    .optional()
    .describe(
      'csv (default), json, arrow (an Arrow IPC stream) or parquet: arrow and parquet carry typed columns (metric_name string, timestamp and updated_at as timestamp[ms, UTC], metric_numeric_value float64) for data frames, never gzipped',
    ),
  format: z
    .enum(DOWNLOAD_FORMATS as [DownloadFormat, ...DownloadFormat[]])
    .optional()
    .describe("Alias of file_format (the seed's sample request uses it)"),
  latest_only: z.enum(['true', 'false']).optional().describe('true: only the newest updated_at of each (metric_name, timestamp)'),
  resolution: z
    .enum(RESOLUTIONS as [Resolution, ...Resolution[]])
    .optional()
    .describe(
      'raw (default): the stored rows. 1m or 1h: one row per metric and minute or hour bucket (aligned to the epoch, every bucket overlapping start_date..end_date, whole) with the count, min, max, sum, avg (sum / count) and last value of its points, a timestamp uploaded more than once counting once with its newest value (as latest_only=true); columns metric_name, bucket, count, min, max, sum, avg, last; max_rows counts buckets and is at most MERIDIAN_MAX_ROLLUP_ROWS',
    ),
  cursor: z.string().optional().describe('The opaque X-Next-Cursor of the previous page'),
});

/**
 * The same parameters as a JSON object. `metrics` may also be an array of exact names: a list
 * (pattern list, or pattern left out), each name without a comma as in the comma-separated
 * form; max_rows may be a number and latest_only a boolean.
 */
export const downloadJsonSchema = downloadQuerySchema.extend({
  metrics: z
    .union([
      z.string(),
      z
        .array(
          z
            .string()
            .min(1)
            .regex(/^[^,]*$/, 'a name holding a comma cannot be part of a list; ask for it with pattern single or a substring pattern'),
        )
        .min(1),
    ])
    .describe('A string as in the form, or an array of exact metric names (a list: pattern list or left out)'),
  max_rows: z.union([z.string(), z.number()]).optional().describe('As in the form; also a JSON number'),
  latest_only: z
    .union([z.enum(['true', 'false']), z.boolean()])
    .optional()
    .describe('As in the form; also a JSON boolean'),
});

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;
const JSON_TYPE = /^application\/json\s*(;|$)/i;

function invalid(error: z.ZodError): DomainError {
  const errors: FieldError[] = error.issues.map((i) => ({ field: ['body', ...i.path.map(String)].join('.'), reason: i.message }));
  return validationError(`invalid request: ${errors.map((e) => `${e.field} ${e.reason}`).join('; ')}`, errors);
}

/** A form body as query text: a repeated name keeps all its values (the parameters refuse it). */
function formQuery(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const seen = out[name];
    out[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return out;
}

function jsonQuery(text: string): RawDownloadQuery {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw validationError(`the body is not JSON: ${(error as Error).message}`, [{ field: 'body', reason: 'not JSON' }]);
  }
  const parsed = downloadJsonSchema.safeParse(value);
  if (!parsed.success) throw invalid(parsed.error);
  const { metrics, max_rows: maxRows, latest_only: latestOnly, ...rest } = parsed.data;
  if (Array.isArray(metrics) && rest.pattern !== undefined && rest.pattern !== 'list') {
    throw validationError('metrics is an array of names: pattern must be list or left out', [
      { field: 'body.pattern', reason: 'must be list when metrics is an array' },
    ]);
  }
  return {
    ...rest,
    // An array is the comma-separated list written another way: the same parameters, so the
    // same rows and a cursor that continues either form.
    metrics: Array.isArray(metrics) ? metrics.join(',') : metrics,
    ...(Array.isArray(metrics) ? { pattern: 'list' } : {}),
    ...(maxRows !== undefined ? { max_rows: String(maxRows) } : {}),
    ...(latestOnly !== undefined ? { latest_only: String(latestOnly) } : {}),
  };
}

/**
 * The parameters of POST /api/v1/metrics/download, from its body only (a query string on the
 * POST is refused rather than silently ignored). The body is read whole up to `limitBytes`
 * (MERIDIAN_MAX_DOWNLOAD_BODY_BYTES): 413 from Content-Length or as soon as the bytes pass it.
 */
export async function downloadBodyQuery(ctx: Context, limitBytes: number): Promise<RawDownloadQuery> {
  if (ctx.querystring !== '') {
    throw validationError('POST /api/v1/metrics/download takes its parameters in the body only', [
      { field: 'query', reason: 'not read on POST: move the parameters into the body' },
    ]);
  }
  const contentType = ctx.get('Content-Type');
  const form = FORM.test(contentType);
  if (!form && !JSON_TYPE.test(contentType)) {
    throw new DomainError('unsupported_media_type', 'the body must be application/x-www-form-urlencoded or application/json with the download parameters');
  }
  const bytes = await readBody(ctx.req, limitBytes).catch((error: unknown) => {
    if (error instanceof DomainError && error.code === 'payload_too_large') {
      throw new DomainError(
        'payload_too_large',
        `the body is larger than ${limitBytes} bytes (MERIDIAN_MAX_DOWNLOAD_BODY_BYTES); split the list into several downloads`,
      );
    }
    throw error;
  });
  const text = bytes.toString('utf8');
  if (!form) return jsonQuery(text);
  const parsed = downloadQuerySchema.safeParse(formQuery(text));
  if (!parsed.success) throw invalid(parsed.error);
  return parsed.data;
}
