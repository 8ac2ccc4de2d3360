import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  decodeCursor,
  encodeCursor,
  nativePointColumns,
  planDownload,
  readRollupPage,
  rowsInWindow,
  streamDownload,
  type CatalogEntry,
  type ConnOptions,
  type DownloadRequest,
} from '@meridian/clickhouse';
import {
  canRead,
  DomainError,
  parseDownloadParams,
  resolveMetricNames,
  validationError,
  type DownloadFormat,
  type DownloadLimits,
  type DownloadParams,
  type RawDownloadQuery,
  type UserRecord,
} from '@meridian/domain';
import { columnarBody, COLUMNAR_MEDIA, isColumnar } from './columnar.ts';
import { decodeRollupCursor, encodeRollupCursor, rollupColumnar, rollupCsv, rollupJson } from './rollup-body.ts';
import { downloadBodyQuery, downloadJsonSchema, downloadQuerySchema } from './request-body.ts';
import { patternEntries, type MetricCatalog } from '../catalog/routes.ts';
import type { CursorSeal } from '../http/cursor-seal.ts';
import { holdWhileResponding, type PerUserSlots } from '../http/per-user-slots.ts';
import { releaseReadChunks } from '../http/release-memory.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';

/**
 * limits: MERIDIAN_MAX_ROWS_CEILING and MERIDIAN_MAX_DOWNLOAD_NAMES; maxBodyBytes: the POST's
 * body (MERIDIAN_MAX_DOWNLOAD_BODY_BYTES); streams: the per-user cap on downloads streaming at
 * once (shared with event exports).
 */
export type DownloadDeps = {
  readonly conn: ConnOptions;
  /** Where the pattern finds its metrics. */
  readonly catalog: MetricCatalog;
  readonly limits: DownloadLimits;
  /** Rows per Arrow batch and Parquet row group (MERIDIAN_DOWNLOAD_BATCH_ROWS). */
  readonly batchRows: number;
  /** Most estimated rows of one part of a page (MERIDIAN_DOWNLOAD_PART_ROWS), so of the part read ahead. */
  readonly partRows: number;
  readonly maxBodyBytes: number;
  readonly cursors: CursorSeal;
  readonly streams?: PerUserSlots;
};

/** The path of both forms: GET with a query string, POST with the same parameters as a body. */
export const DOWNLOAD_PATH = '/api/v1/metrics/download';

const CSV_HEADER = 'metric_name,timestamp,metric_numeric_value,updated_at';

const csvExample = `${CSV_HEADER}\ncpu:load,2024-01-02T03:04:05+0000,0.75,2024-01-02T03:05:00.125+0000\n`;
/** file_format=json: the CSV's four fields, same formats, as an array streamed object by object. */
const jsonRows = z.array(
  z.object({
    metric_name: z.string(),
    timestamp: z.string().describe('UTC, YYYY-MM-DDTHH:MM:SS[.sss]+0000'),
    metric_numeric_value: z.number().describe('the shortest decimal that reads back to the same double'),
    updated_at: z.string().describe('when the point was accepted, same format'),
  }),
);
const jsonExample = [
  { metric_name: 'cpu:load', timestamp: '2024-01-02T03:04:05+0000', metric_numeric_value: 0.75, updated_at: '2024-01-02T03:05:00.125+0000' },
];

/**
 * The metrics the download reads: the pattern applied to the catalog and the caller's
 * entitlements; with their catalog entries, which size the parts of the download.
 */
async function resolve(deps: DownloadDeps, params: DownloadParams, user: UserRecord): Promise<{ names: string[]; entries: Map<string, CatalogEntry> }> {
  const catalog = await patternEntries(deps.catalog, params.pattern, params.metrics);
  const names = resolveMetricNames(
    params.pattern,
    params.metrics,
    catalog.map((c) => c.metric_name),
    (name) => canRead(user, name),
  );
  return { names, entries: new Map(catalog.map((c) => [c.metric_name, c])) };
}

/**
 * An uncompressed download is read in parts of whole metrics (one query each): the first of
 * about 50k rows (estimated from the catalog within the time window), so the first byte
 * comes after sorting those rather than the whole page (18.16 sorts all it reads); later
 * parts grow fourfold up to MERIDIAN_DOWNLOAD_PART_ROWS, one part running ahead of the one streaming.
 */
const FIRST_PART_ROWS = 50_000;
const partSizes = (partRows: number) => ({ firstRows: Math.min(FIRST_PART_ROWS, partRows), maxRows: partRows });

function fileName(params: DownloadParams): string {
  const stem = params.pattern === 'single' ? params.metrics : `metrics-${params.pattern}`;
  return `${stem.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100) || 'metrics'}.${MEDIA[params.format].extension}`;
}

const MEDIA: Record<DownloadFormat, { readonly type: string; readonly extension: string }> = {
  csv: { type: 'text/csv; charset=utf-8', extension: 'csv' },
  json: { type: 'application/json; charset=utf-8', extension: 'json' },
  ...COLUMNAR_MEDIA,
};

/** What the download asks ClickHouse for: the text formats' bytes, or typed columns the api encodes. */
const queryFormat = (format: DownloadFormat): DownloadRequest['format'] => (isColumnar(format) ? 'columns' : format);

/** The body of a download that reads no metric: the header, an empty array, or an empty stream or file with its schema. */
function emptyBody(params: DownloadParams) {
  if (params.resolution !== 'raw') return rollupBody(params.format, []);
  if (isColumnar(params.format)) return columnarBody(params.format, (async function* () {})());
  return params.format === 'csv' ? `${CSV_HEADER}\n` : '[]';
}

function rollupBody(format: DownloadFormat, rows: Parameters<typeof rollupCsv>[0]) {
  if (isColumnar(format)) return rollupColumnar(format, rows);
  return format === 'csv' ? rollupCsv(rows) : rollupJson(rows);
}

/**
 * What a cursor continues: the caller and the parameters that choose the rows. A cursor sealed
 * for one is refused on another (max_rows and the format may change between pages).
 */
function cursorContext(params: DownloadParams, user: UserRecord): unknown[] {
  // A raw download's context is unchanged (its cursors stay valid); a rollup's names its resolution.
  return [
    'download',
    user.user_name,
    params.pattern,
    params.metrics,
    params.fromMs,
    params.toMs,
    params.latestOnly,
    ...(params.resolution === 'raw' ? [] : [params.resolution]),
  ];
}

function nextLink(ctx: Context, cursor: string): string {
  const url = new URL(ctx.originalUrl, 'http://x');
  url.searchParams.set('cursor', cursor);
  return `${url.pathname}${url.search}`;
}

const DESCRIPTION = [
  'Rows are ordered by metric_name, timestamp, updated_at; rows with the same metric_name and timestamp are all returned (latest_only=true keeps the newest).',
  'Bytes are formatted by ClickHouse and streamed: millions of rows with flat memory. Accept-Encoding: gzip gives a gzip body.',
  'Timestamps are YYYY-MM-DDTHH:MM:SS+0000 (UTC), with .sss only when the milliseconds are not zero; values are the shortest decimal that reads back to the same double.',
  'A single or list name that does not exist or that you may not read: 404, the same for both. A pattern that matches nothing: 200 with only the CSV header, or [].',
  'JSON: an array of objects with the same four fields.',
  'A list names at most MERIDIAN_MAX_DOWNLOAD_NAMES metrics (400 above).',
  "resolution=1m or 1h: the rollups, one row per metric and bucket in (metric_name, bucket) order, with the columns metric_name, bucket (the bucket's start, same timestamp format), count, min, max, sum, avg and last, of the points deduplicated as latest_only=true keeps them; in Arrow and Parquet bucket is timestamp[ms, UTC], count int64, the others float64. Pages of at most MERIDIAN_MAX_ROLLUP_ROWS buckets, continued by the same cursor rules.",
].join(' ');

function okResponse(link: boolean) {
  return {
    description: `The rows. Headers: Content-Disposition attachment; X-Next-Cursor${link ? ' and Link rel="next"' : ''} when max_rows cut the result.`,
    contentType: 'text/csv',
    schema: z.string(),
    example: csvExample,
    alsoAs: {
      'application/json': { schema: jsonRows, example: jsonExample },
      [COLUMNAR_MEDIA.arrow.type]: { schema: z.string().describe('format=arrow: an Arrow IPC stream, a record batch per MERIDIAN_DOWNLOAD_BATCH_ROWS rows') },
      [COLUMNAR_MEDIA.parquet.type]: {
        schema: z.string().describe('format=parquet: a Parquet file, a row group per MERIDIAN_DOWNLOAD_BATCH_ROWS rows, Snappy'),
      },
    },
    headers: {
      'X-Next-Cursor': {
        description: `Opaque: pass as cursor${link ? '' : " in the next POST's body (with the same other parameters)"} to get the rows after this page`,
        schema: z.string(),
      },
      ...(link ? { Link: { description: '<same query with cursor>; rel="next"', schema: z.string() } } : {}),
    },
  };
}

/** Both forms: parameters from the query string (GET, HEAD) or the body (POST), then the same answer. */
async function answer(deps: DownloadDeps, ctx: Context, user: UserRecord, raw: () => Promise<RawDownloadQuery> | RawDownloadQuery): Promise<void> {
  if (deps.streams) holdWhileResponding(ctx, deps.streams, user.user_name);
  const params = parseDownloadParams(await raw(), deps.limits);
  const sealed = params.cursor === null ? null : deps.cursors.open(params.cursor, cursorContext(params, user));
  const rollup = params.resolution !== 'raw';
  const after = sealed === null || rollup ? null : decodeCursor(sealed);
  const rollupAfter = sealed === null || !rollup ? null : decodeRollupCursor(sealed);
  if (params.cursor !== null && after === null && rollupAfter === null)
    throw validationError('cursor is not one this service issued for this query', [{ field: 'cursor', reason: 'not a cursor of this query' }]);
  const { names, entries } = await resolve(deps, params, user);

  ctx.set('Content-Disposition', `attachment; filename="${fileName(params)}"`);
  const columnar = isColumnar(params.format) ? params.format : null;
  ctx.type = MEDIA[params.format].type;
  ctx.set('Vary', 'Accept-Encoding');
  if (names.length === 0) {
    ctx.body = emptyBody(params);
    return;
  }
  // Arrow and Parquet are binary and Parquet compresses its own pages: neither is gzipped.
  const gzip = columnar === null && /\bgzip\b/i.test(ctx.get('Accept-Encoding'));
  // HEAD (served by the GET route): the status and headers a GET answers, without its
  // queries. X-Next-Cursor is left out: finding the page's end is a query (a sort, at worst).
  if (ctx.method === 'HEAD') {
    if (gzip) ctx.set('Content-Encoding', 'gzip');
    ctx.status = 200;
    return;
  }
  // The client going away cancels the query on the server (KILL QUERY), not only the socket.
  const abort = new AbortController();
  const onClose = () => {
    if (!ctx.res.writableFinished) abort.abort(new Error('client disconnected'));
  };
  ctx.req.on('close', onClose);
  ctx.res.on('close', onClose);
  if (params.resolution !== 'raw') {
    await answerRollups(deps, ctx, params, user, names, rollupAfter, abort.signal);
    return;
  }
  const request: DownloadRequest = {
    metricNames: names,
    fromMs: params.fromMs,
    toMs: params.toMs,
    maxRows: params.maxRows,
    after,
    format: queryFormat(params.format),
    latestOnly: params.latestOnly,
    gzip,
    ...(columnar ? { batchRows: deps.batchRows } : {}),
    // Always our own id: a caller's X-Request-Id may repeat, and a cancel kills by query id.
    queryId: randomUUID(),
  };
  ctx.state.log.info({ clickhouse_query_id: request.queryId }, 'download query');
  const rowsInWindowOf = (entry: CatalogEntry | undefined) => (entry ? rowsInWindow(entry, params.fromMs, params.toMs) : 0);
  let plan;
  let stream;
  try {
    // The plan first, then the stream. (Starting the first part beside the plan's count was
    // measured: on 2 cores the two queries share the cores, and the first byte of 10M rows
    // came later, 450 ms against 310 ms.)
    const rowsOf = (name: string) => rowsInWindowOf(entries.get(name));
    plan = await planDownload(deps.conn, request, { signal: abort.signal, rowsOf });
    stream = await streamDownload(deps.conn, request, { plan, signal: abort.signal, chunks: { rowsOf, sizes: partSizes(deps.partRows) } });
  } catch (cause) {
    if (abort.signal.aborted) return; // nobody is listening any more
    throw new DomainError('unavailable', 'the metric store did not answer; retry later', [], { cause });
  }
  if (plan.next) {
    const token = deps.cursors.seal(encodeCursor(plan.next), cursorContext(params, user));
    ctx.set('X-Next-Cursor', token);
    // A link is a GET: a POST's next page is the same body with this cursor, which no URL holds.
    if (ctx.method === 'GET') ctx.set('Link', `<${nextLink(ctx, token)}>; rel="next"`);
  }
  if (stream.contentEncoding) ctx.set('Content-Encoding', stream.contentEncoding);
  // The body's chunks and the encoded batches are this response's alone: freed once read, and once sent.
  const batches = () => nativePointColumns(stream.body as AsyncIterable<Buffer>, stream.names, { consumed: releaseReadChunks });
  ctx.body = columnar ? columnarBody(columnar, batches(), ctx.res) : stream.body;
}

/**
 * A download at a resolution: a page of rollup rows (at most MERIDIAN_MAX_ROLLUP_ROWS, read
 * whole), encoded in the asked format; the cursor continues after its last (metric, bucket).
 */
async function answerRollups(
  deps: DownloadDeps,
  ctx: Context,
  params: DownloadParams,
  user: UserRecord,
  names: string[],
  after: { metric_name: string; bucket: number } | null,
  signal: AbortSignal,
): Promise<void> {
  const queryId = randomUUID();
  ctx.state.log.info({ clickhouse_query_id: queryId, resolution: params.resolution }, 'rollup download query');
  let page;
  try {
    page = await readRollupPage(deps.conn, {
      resolution: params.resolution as '1m' | '1h',
      metricNames: names,
      fromMs: params.fromMs,
      toMs: params.toMs,
      after,
      maxRows: params.maxRows,
      queryId,
      signal,
    });
  } catch (cause) {
    if (signal.aborted) return; // nobody is listening any more
    throw new DomainError('unavailable', 'the metric store did not answer; retry later', [], { cause });
  }
  if (page.next) {
    const token = deps.cursors.seal(encodeRollupCursor(page.next), cursorContext(params, user));
    ctx.set('X-Next-Cursor', token);
    if (ctx.method === 'GET') ctx.set('Link', `<${nextLink(ctx, token)}>; rel="next"`);
  }
  ctx.body = rollupBody(params.format, page.rows);
}

export function downloadRoutes(deps: DownloadDeps): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: DOWNLOAD_PATH,
      operationId: 'downloadMetrics',
      summary: 'Download metric data points as CSV, JSON, Arrow or Parquet',
      description: `${DESCRIPTION} HEAD answers the status and headers of the GET without reading any row (and so without X-Next-Cursor and Link). A request target longer than MERIDIAN_MAX_URL_BYTES gets 414: send the same parameters as a POST body.`,
      tags: ['metrics'],
      auth: 'user',
      streaming: true,
      query: downloadQuerySchema,
      responses: { 200: okResponse(true) },
      problems: ['not_found', 'too_many', 'unavailable'],
      handler: (ctx, { user }) => answer(deps, ctx, user, () => ctx.query),
    }),
    defineRoute({
      method: 'POST',
      path: DOWNLOAD_PATH,
      operationId: 'downloadMetricsPost',
      summary: 'Download metric data points, the parameters in the body (for long lists)',
      description: [
        "The GET's parameters as an application/x-www-form-urlencoded body (exactly its query string) or a JSON object, where metrics may also be an array of exact names (a list).",
        'Same rows, bytes and headers as the GET, except Link: the next page is this POST again with the X-Next-Cursor value as cursor in the body (a cursor continues the same parameters in either form).',
        `The body is at most MERIDIAN_MAX_DOWNLOAD_BODY_BYTES (413 above); parameters in the query string are refused (400). ${DESCRIPTION}`,
      ].join(' '),
      tags: ['metrics'],
      auth: 'user',
      streaming: true,
      requestBodyDoc: { contentTypes: { 'application/x-www-form-urlencoded': downloadQuerySchema, 'application/json': downloadJsonSchema } },
      responses: { 200: okResponse(false) },
      problems: ['not_found', 'too_many', 'unavailable', 'payload_too_large', 'unsupported_media_type'],
      handler: (ctx, { user }) => answer(deps, ctx, user, () => downloadBodyQuery(ctx, deps.maxBodyBytes)),
    }),
  ];
}
