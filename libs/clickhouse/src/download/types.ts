/** The query side of GET /api/v1/metrics/download: what the api asks for. */

/** csv, json: ClickHouse writes the body's bytes; columns: typed columns in its Native format, for the api to encode (native.ts). */
export type DownloadFormat = 'csv' | 'json' | 'columns';

/**
 * The full sort key of a row: rows are ordered by it and it is unique per row (the Kafka
 * position says which point-batch fact, and row_in_batch which point of it), so "strictly
 * after this key" continues a download exactly.
 */
export type DownloadCursor = {
  metric_name: string;
  ts: number;
  updated_at: number;
  partition: number;
  offset: number;
  row: number;
};

export type DownloadRequest = {
  /** Already resolved and entitlement-filtered by the caller; may be thousands. */
  metricNames: readonly string[];
  /** Inclusive bounds on ts, epoch milliseconds. */
  fromMs: number;
  toMs: number;
  /** Page size. */
  maxRows: number;
  /** Continue strictly after this row. */
  after: DownloadCursor | null;
  format: DownloadFormat;
  /** Keep only the newest row of each (metric_name, ts). */
  latestOnly: boolean;
  /** Ask ClickHouse to gzip the response. */
  gzip: boolean;
  /** A UUID, used to KILL QUERY when the client goes away. */
  queryId: string;
  /** format 'columns': rows per Native block (ClickHouse's max_block_size), so per batch the api encodes. */
  batchRows?: number;
};

/**
 * What planDownload found. `next` is the key of the last row of this page when more rows
 * follow it, else null. Passing the plan to streamDownload makes the page exactly the rows
 * in (after, next], so rows inserted between the two calls are never skipped.
 */
export type DownloadPlan = { next: DownloadCursor | null };
