import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { cancelQueries, planQueryId } from './cancel.ts';
import { byteOrder, chunkNames, type ChunkSizes } from './chunks.ts';
import { filterSql } from './filter-sql.ts';
import { startQuery, type ConnOptions, type StartedQuery } from './http.ts';
import { streamSql, type Frame } from './query-sql.ts';
import type { DownloadPlan, DownloadRequest } from './types.ts';
import { assertValidRequest } from './validate.ts';

export type DownloadStream = {
  /** The response body exactly as ClickHouse wrote it (gzip included): pipe it to the client. */
  body: NodeJS.ReadableStream;
  contentEncoding: 'gzip' | null;
  /** Format 'columns': the names the blocks' name_index counts in (nativePointColumns' `names`); empty otherwise. */
  names: readonly string[];
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
  /**
   * Split a planned, uncompressed page into groups of metrics, one query each (chunks.ts), so
   * the first bytes follow the sort of a small group. `rowsOf` estimates a metric's rows.
   * Gzip keeps one query: its body must be one gzip member.
   */
  chunks?: { readonly rowsOf: (metricName: string) => number; readonly sizes: ChunkSizes };
};

/**
 * Starts the page's query (its first one, when split) and resolves once ClickHouse answered
 * 200, so a ClickHouse error becomes a rejection (the api answers 503/500) rather than a cut body.
 */
export async function streamDownload(conn: ConnOptions, req: DownloadRequest, options: StreamOptions = {}): Promise<DownloadStream> {
  assertValidRequest(req);
  const { plan, signal } = options;
  const groups = plan && options.chunks && !req.gzip ? chunkNames(namesInPage(req, plan), options.chunks.rowsOf, options.chunks.sizes) : null;
  let killed: Promise<void> | null = null;
  const kill = () => (killed ??= cancelQueries(conn, req.queryId));
  const running: StartedQuery[] = [];
  const cancel = () => {
    for (const q of running) q.abort();
    return kill();
  };
  // Each query's HTTP request follows the signal itself (rejecting with its reason); the server side needs the KILL.
  const onAbort = () => void kill().catch(() => {}); // the caller sees the abort itself; a failed KILL has no one to tell
  signal?.addEventListener('abort', onAbort, { once: true });
  const done = () => signal?.removeEventListener('abort', onAbort);

  // A single query reads the request's names; split, each group its own (consecutive in the same
  // order: a group's name_index starts after the names of the groups before it).
  const single = !groups || groups.length <= 1;
  const singleNames = groups?.[0] ?? req.metricNames;
  const names = req.format !== 'columns' ? [] : single ? [...new Set(singleNames)].sort(byteOrder) : groups.flat();
  const offsets = groups ? groups.map((_, i) => groups.slice(0, i).reduce((n, g) => n + g.length, 0)) : [];

  const start = (names: readonly string[], part: number, frame: Frame): StartedQuery => {
    const filter = filterSql({ ...req, metricNames: names, until: plan?.next ?? null });
    const sql = streamSql(req.format, req.latestOnly, filter.where, plan ? null : req.maxRows, frame);
    // Part 0 carries the download's own id; later parts extend it, so one KILL (by prefix) stops them all.
    const queryId = part === 0 ? req.queryId : planQueryId(req.queryId, `part${part}`);
    const settings = req.batchRows === undefined ? {} : { settings: { max_block_size: req.batchRows } };
    const started = startQuery(conn, { sql, tables: filter.tables, queryId, gzip: req.gzip, ...settings, ...(signal ? { signal } : {}) });
    running.push(started);
    return started;
  };

  try {
    if (single) {
      const body = await start(singleNames, 0, { head: true, tail: true }).response;
      body.once('close', done);
      return { body, contentEncoding: body.headers['content-encoding'] === 'gzip' ? 'gzip' : null, names, cancel };
    }
    const parts = groups.map((group, i) => () => start(group, i, { head: i === 0, tail: i === groups.length - 1, nameOffset: offsets[i]! }));
    // The first two parts start together: ClickHouse reads and sorts the second beside the first.
    const first = parts[0]!().response;
    const ahead = parts[1]!().response;
    ahead.catch(() => undefined); // awaited in pipeParts; until then a failure must not count as unhandled
    const body = new PassThrough();
    body.once('close', done);
    pipeParts(await first, ahead, parts, req.format === 'json', body).catch((error: unknown) => {
      void cancel().catch(() => {});
      body.destroy(error as Error);
    });
    return { body, contentEncoding: null, names, cancel };
  } catch (err) {
    done();
    for (const q of running) q.abort();
    // Split, the part ahead was started beside the first: on the server it sorts on to its end
    // unless killed (18.16 notices a closed connection only at its next write).
    if (!single) void kill().catch(() => {});
    throw err;
  }
}

/** The page's metrics: a name outside (after, until] by name holds no row of it. */
function namesInPage(req: DownloadRequest, plan: DownloadPlan): string[] {
  const after = req.after?.metric_name;
  const until = plan.next?.metric_name;
  return req.metricNames.filter((n) => (after === undefined || byteOrder(n, after) >= 0) && (until === undefined || byteOrder(n, until) <= 0));
}

/**
 * Writes the parts one after the other into `out`, with one part ahead: while part i streams,
 * part i + 1 is already running (started with part i, or when part i - 1 was done), so
 * ClickHouse reads and sorts it on another core meanwhile; part i + 2 starts once part i is
 * written. At most two queries of a download run at once, the part ahead holding at most one
 * part's rows (PART_ROWS bounds a part). JSON: a part's first object gets the comma that
 * separates it from an object of an earlier part.
 */
async function pipeParts(
  first: IncomingMessage,
  ahead: Promise<IncomingMessage>,
  parts: ReadonlyArray<() => StartedQuery>,
  json: boolean,
  out: PassThrough,
): Promise<void> {
  let objects = false;
  let current = first;
  let next: Promise<IncomingMessage> | null = ahead;
  for (let i = 0; i < parts.length; i++) {
    let firstBytes = true;
    for await (const chunk of current as AsyncIterable<Buffer>) {
      if (out.destroyed) return; // the client went away: the caller's abort cancels the queries
      if (json && firstBytes && i > 0 && objects && chunk[0] === 0x7b) out.write(',');
      firstBytes = false;
      if (json && !objects && chunk.includes(0x7b)) objects = true;
      if (!out.write(chunk)) await drainedOrClosed(out);
    }
    if (out.destroyed) return;
    if (!next) break;
    const following = next;
    next = null;
    if (i + 2 < parts.length) {
      next = parts[i + 2]!().response;
      next.catch(() => undefined); // awaited at the next part; until then a failure must not count as unhandled
    }
    current = await following;
  }
  out.end();
}

/** Resolves when `out` takes more bytes, or is gone; leaves no listener behind. */
function drainedOrClosed(out: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    if (out.destroyed) return resolve();
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
  });
}
