import { cancelDownload } from './cancel.ts';
import { filterSql } from './filter-sql.ts';
import { startQuery, type ConnOptions } from './http.ts';
import { streamSql } from './query-sql.ts';
import type { DownloadPlan, DownloadRequest } from './types.ts';
import { assertValidRequest } from './validate.ts';

export type DownloadStream = {
  /** The response body exactly as ClickHouse wrote it (gzip included): pipe it to the client. */
  body: NodeJS.ReadableStream;
  contentEncoding: 'gzip' | null;
  /** Stops the query on the server too; safe to call more than once and after the end. */
  cancel(): Promise<void>;
};

export type StreamOptions = {
  /**
   * planDownload's answer for the same request: the page is then exactly the rows in
   * (after, plan.next], so rows inserted after planning cannot move the page's end and be
   * skipped by the next page. Without it, the first maxRows rows after `after`.
   */
  plan?: DownloadPlan;
  /** Aborting it cancels like cancel(), also while ClickHouse is still sorting (before any byte). */
  signal?: AbortSignal;
};

/**
 * Starts the page's query and resolves once ClickHouse answered 200, so a ClickHouse error
 * becomes a rejection (the api answers 503/500) rather than a cut body.
 */
export async function streamDownload(conn: ConnOptions, req: DownloadRequest, options: StreamOptions = {}): Promise<DownloadStream> {
  assertValidRequest(req);
  const { plan, signal } = options;
  const filter = filterSql({ ...req, until: plan?.next ?? null });
  const sql = streamSql(req.format, req.latestOnly, filter.where, plan ? null : req.maxRows);
  const started = startQuery(conn, { sql, tables: filter.tables, queryId: req.queryId, gzip: req.gzip, ...(signal ? { signal } : {}) });
  let cancelled: Promise<void> | null = null;
  const cancel = () => {
    started.abort();
    return (cancelled ??= cancelDownload(conn, req.queryId));
  };
  const onAbort = () => void cancel().catch(() => {}); // the caller sees the abort itself; a failed KILL has no one to tell
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const body = await started.response;
    body.once('close', () => signal?.removeEventListener('abort', onAbort));
    return { body, contentEncoding: body.headers['content-encoding'] === 'gzip' ? 'gzip' : null, cancel };
  } catch (err) {
    signal?.removeEventListener('abort', onAbort);
    started.abort();
    throw err;
  }
}
