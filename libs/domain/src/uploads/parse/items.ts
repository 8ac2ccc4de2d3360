/** What the upload parser yields, and the options and defaults it reads (../parse.ts). */
export type UploadLayout = 'csv' | 'csv-with-header' | 'download-csv' | 'json-body' | 'json-array' | 'ndjson';

/**
 * `row`: for CSV and NDJSON the physical line (a header is line 1, blank lines count); for the
 * JSON documents the 1-based index in the values array; 0 for the document as a whole; -1 for
 * the final "N more errors not shown". `column`: timestamp, value, metric_name, updated_at,
 * or row for structural problems.
 */
export type UploadItem =
  | { kind: 'point'; row: number; metric_name: string; ts: number; value: number }
  | { kind: 'error'; row: number; column: string; reason: string }
  | { kind: 'layout'; layout: UploadLayout };

export type ParseUploadOptions = {
  /** The metric of layouts without a per-row name; when given, per-row and body names must equal it. */
  metricName?: string;
  /** Errors yielded before the rest are only counted (default DEFAULT_MAX_UPLOAD_ERRORS). */
  maxErrors?: number;
  /** Longest CSV record or NDJSON line, in characters; a longer one is a row error (default 65536). */
  maxLineLength?: number;
  /** Most fields of a CSV record; a wider one is a row error (default 64). */
  maxColumns?: number;
  /** Longest json-body or json-array document, in characters; a longer one stops the upload (default 64 Mi). */
  maxJsonDocumentLength?: number;
};

export const DEFAULT_MAX_UPLOAD_ERRORS = 100;
export const DEFAULT_MAX_JSON_DOCUMENT_LENGTH = 64 * 1024 * 1024;
/** Deepest nesting of a JSON document: the layouts need 2 ({values: [{...}]}); deeper is never valid. */
export const MAX_JSON_NESTING = 64;

/** One layout's reader of the upload's text, once detect.ts has chosen it. */
export type LayoutReader = {
  feed(text: string): void;
  end(): void;
  /** The physical line being read (0 for a JSON document): where a failure to read further happened. */
  readonly line: number;
};
