import { randomUUID } from 'node:crypto';
import {
  cancelDownload,
  planDownload,
  streamDownload,
  type ConnOptions,
  type DownloadPlan,
  type DownloadRequest,
  type DownloadStream,
  type StreamOptions,
} from '@meridian/clickhouse';
import type { Logger } from '@meridian/observability';

type Opened = { ok: true; stream: DownloadStream } | { ok: false; error: unknown };

/**
 * Plans the page and opens its stream. When the catalog's counts (whole metrics: an upper
 * bound) say max_rows covers every matching row, an uncompressed download's first part starts
 * while the plan counts, and the first byte waits for the longer of the two rather than their
 * sum. Should the plan cut the page after all, that early start is killed and the page opened
 * again under a new query id, bounded by the plan. (Gzip is one query over the whole page:
 * nothing to gain early.)
 */
export async function openPage(conn: ConnOptions, request: DownloadRequest, estimatedRows: number, options: Omit<StreamOptions, 'plan'>, log: Logger): Promise<{ plan: DownloadPlan; stream: DownloadStream }> {
  const early: Promise<Opened> | null = request.gzip || estimatedRows > request.maxRows
    ? null
    : streamDownload(conn, request, { ...options, plan: { next: null } }).then((stream) => ({ ok: true as const, stream }), (error: unknown) => ({ ok: false as const, error }));
  const discardEarly = async () => {
    // Not waiting for it to answer (a large first part sorts a while): kill its queries by their id.
    void early?.then((opened) => {
      if (!opened.ok) return;
      opened.stream.body.on('error', () => {}); // its cancel ends it with an error nobody reads
      void opened.stream.cancel().catch(() => {});
    });
    if (early) await cancelDownload(conn, request.queryId).catch(() => {});
  };
  let plan: DownloadPlan;
  try {
    plan = await planDownload(conn, request, options.signal ? { signal: options.signal } : {});
  } catch (error) {
    void discardEarly();
    throw error;
  }
  if (early && plan.next === null) {
    const opened = await early;
    if (opened.ok) return { plan, stream: opened.stream };
    throw opened.error;
  }
  await discardEarly();
  const bounded = { ...request, queryId: early ? randomUUID() : request.queryId };
  if (bounded.queryId !== request.queryId) log.info({ clickhouse_query_id: bounded.queryId }, 'download query');
  return { plan, stream: await streamDownload(conn, bounded, { ...options, plan }) };
}
