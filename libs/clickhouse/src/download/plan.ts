import { cancelDownload, planQueryId } from './cancel.ts';
import { filterSql } from './filter-sql.ts';
import { queryText, type ConnOptions, type QueryRequest } from './http.ts';
import { boundaryInMetricSql, countPerMetricSql, countSql } from './query-sql.ts';
import type { DownloadCursor, DownloadPlan, DownloadRequest } from './types.ts';
import { assertValidRequest } from './validate.ts';

export type PlanOptions = {
  /** Aborting it stops the plan's running query on the server and rejects with the signal's reason. */
  signal?: AbortSignal;
};

/**
 * Decides where the page ends, before any byte is streamed (the cursor goes into a header):
 *   1. count() of the rows after the cursor: cheap (no sort); most pages end here, next = null;
 *   2. otherwise rows per metric in name order, to find the metric holding the page's last row;
 *   3. that row's key, by sorting only that metric's rows (the primary key skips the others).
 * On 18.16 this beats one ORDER BY ... LIMIT 1 OFFSET over all metrics, which sorts every
 * row after the cursor (measured on 10M rows: 0.44–0.55 s against 1.4–2.6 s).
 */
export async function planDownload(conn: ConnOptions, req: DownloadRequest, options: PlanOptions = {}): Promise<DownloadPlan> {
  assertValidRequest(req);
  const { signal } = options;
  const onAbort = () => void cancelDownload(conn, req.queryId).catch(() => {}); // the caller sees the abort itself
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await plan(conn, req, signal);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

async function plan(conn: ConnOptions, req: DownloadRequest, signal: AbortSignal | undefined): Promise<DownloadPlan> {
  const filter = filterSql({ ...req, until: null });
  const run = (step: string, sql: string, tables: QueryRequest['tables'] = filter.tables) =>
    queryText(conn, { sql, tables, queryId: planQueryId(req.queryId, step), ...(signal ? { signal } : {}) });

  const total = toCount(await run('count', countSql(filter.where)));
  if (total <= req.maxRows) return { next: null };

  const perMetric = parseRows(await run('per-metric', countPerMetricSql(req.latestOnly, filter.where)));
  let before = 0;
  for (const [i, row] of perMetric.entries()) {
    const n = toCount(row.n);
    if (before + n < req.maxRows) {
      before += n;
      continue;
    }
    const position = req.maxRows - before;
    if (position === n && i === perMetric.length - 1) return { next: null }; // the page ends with the last row
    if (typeof row.metric_name !== 'string') throw new Error('ClickHouse answered a row without metric_name');
    const tables = [...filter.tables, { name: 'only_name', structure: 'name String', rows: [[row.metric_name]] }];
    const [last] = parseRows(await run('boundary', boundaryInMetricSql(req.latestOnly, filter.where, position), tables));
    if (!last) throw new Error('ClickHouse found no boundary row (rows changed between the count and the boundary query)');
    return { next: toCursor(row.metric_name, last) };
  }
  return { next: null }; // latestOnly: fewer distinct (metric_name, ts) than rows
}

function toCursor(metricName: string, row: Record<string, unknown>): DownloadCursor {
  return {
    metric_name: metricName,
    ts: toSafeInt(row.ts),
    updated_at: toSafeInt(row.updated_at),
    partition: toSafeInt(row.kafka_partition),
    offset: toSafeInt(row.kafka_offset),
    row: toSafeInt(row.row_in_batch),
  };
}

function parseRows(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** ClickHouse prints 64-bit integers as JSON strings; both forms are accepted. */
function toSafeInt(v: unknown): number {
  const n = typeof v === 'string' ? Number(v.trim()) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw new Error(`ClickHouse answered a non-integer: ${String(v)}`);
  return n;
}

function toCount(v: unknown): number {
  const n = toSafeInt(v);
  if (n < 0) throw new Error(`ClickHouse answered a negative count: ${n}`);
  return n;
}
