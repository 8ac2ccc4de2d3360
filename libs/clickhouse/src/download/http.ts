import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { ClickHouseOptions } from '../client.ts';
import { externalTableParams, multipartBody, type ExternalTable } from './external-data.ts';

/**
 * One ClickHouse query over HTTP with node:http, because @clickhouse/client cannot send
 * external data. The response body is handed over as the socket delivers it: never buffered.
 */

export type ConnOptions = Pick<ClickHouseOptions, 'url' | 'username' | 'password' | 'database' | 'fallbackUrls' | 'readModelQueryTimeoutMs'>;

export type QueryRequest = {
  readonly sql: string;
  readonly tables?: readonly ExternalTable[];
  readonly queryId?: string;
  readonly gzip?: boolean;
  /** Server settings for this query (sent as URL parameters; names and values are ours, never a caller's). */
  readonly settings?: Readonly<Record<string, string | number>>;
  /** Destroys the request (and the response body) with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * Sends the query on a kept-alive connection (a small, read-only query: a read-model lookup).
   * A connection the server closed while idle is noticed before any answer, and the query is sent
   * once more on a new one.
   */
  readonly reuseConnection?: boolean;
};

export type StartedQuery = {
  /** Resolves with the response once ClickHouse answered 200; rejects with its error otherwise. */
  readonly response: Promise<IncomingMessage>;
  /** Destroys the request, its response and their socket, without an 'error' event (the server notices at its next write). */
  abort(): void;
};

/** Poco, under ClickHouse's HTTP server, refuses request lines longer than about 16 KiB. */
const MAX_URL_LENGTH = 15_000;
/** How much of an error body goes into the Error message. */
const MAX_ERROR_BYTES = 16_384;

/**
 * A connection per query: a download runs one to four queries, and a reused keep-alive socket
 * that ClickHouse closed meanwhile (its keep_alive_timeout is 3 s) would fail the request.
 */
const agents = { 'http:': new http.Agent({ keepAlive: false }), 'https:': new https.Agent({ keepAlive: false }) };
/**
 * Kept-alive connections for read-model lookups (QueryRequest.reuseConnection): lookups are
 * small and many, and a connection per lookup costs both sides a TCP and HTTP session setup
 * (measured at load 9: 0.4–0.6 ms of client CPU per query against 0.4 kept alive). Node closes an idle socket a second before the server's
 * announced `Keep-Alive: timeout`; a socket closed anyway (no announcement, a proxy) fails
 * before any answer and the query is sent again on a new connection.
 */
const keptAlive = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

/** A statement that only reads (SELECT, or WITH ... SELECT): the only kind a kept-alive connection may send. */
const READ_ONLY_STATEMENT = /^\s*(?:SELECT|WITH)\b/i;

/** Errors of a request sent on a reused socket before any answer: the socket was stale, the query never ran. */
const staleSocketErrors = new WeakSet<object>();
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/** Errors that say the server was never reached: the query did not start there, so another replica may run it. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Starts the query on `conn.url`, or, when that server cannot be reached, on the first of
 * `conn.fallbackUrls` that can (the replicas of a cluster hold the same rows). Only a server never
 * reached is passed over, so a query runs on one server at most, and a KILL QUERY sent the same
 * way lands where the query runs (unless the first server came back in between; the abort of
 * the socket still stops it there).
 */
export function startQuery(conn: ConnOptions, q: QueryRequest): StartedQuery {
  // A stale kept-alive socket makes the query go twice: harmless for a read, not for a write.
  if (q.reuseConnection && !READ_ONLY_STATEMENT.test(q.sql))
    throw new Error('a kept-alive connection (reuseConnection) is for SELECT queries only: a write sent again after a stale socket could run twice');
  const [first, ...rest] = [conn.url, ...(conn.fallbackUrls ?? [])];
  let current!: StartedQuery;
  // A query sent on a stale kept-alive socket never ran: it is sent once more on a new connection.
  const startAt = (url: string): Promise<IncomingMessage> => {
    current = startQueryAt(url, conn, q);
    return current.response.catch((error: unknown) => {
      if (!staleSocketErrors.has(error as object) || q.signal?.aborted) throw error;
      current = startQueryAt(url, conn, { ...q, reuseConnection: false });
      return current.response;
    });
  };
  const response = rest.reduce<Promise<IncomingMessage>>(
    (answered, url) =>
      answered.catch((error: unknown) => {
        if (!UNREACHABLE.has(String((error as NodeJS.ErrnoException).code)) || q.signal?.aborted) throw error;
        return startAt(url);
      }),
    startAt(first),
  );
  return { response, abort: () => current.abort() };
}

function startQueryAt(at: string, conn: ConnOptions, q: QueryRequest): StartedQuery {
  const tables = q.tables ?? [];
  const url = new URL(at);
  const params = new URLSearchParams([
    ['query', q.sql],
    ['database', conn.database],
    ...(q.queryId ? [['query_id', q.queryId] as [string, string]] : []),
    ...(q.gzip ? [['enable_http_compression', '1'] as [string, string]] : []),
    ...Object.entries(q.settings ?? {}).map(([name, value]) => [name, String(value)] as [string, string]),
    ...externalTableParams(tables),
  ]);
  url.search = params.toString();
  if (url.href.length > MAX_URL_LENGTH) throw new Error(`ClickHouse request URL too long (${url.href.length} characters)`);
  // No tables, no multipart: ClickHouse rejects a form without parts.
  const { body, contentType } = tables.length > 0 ? multipartBody(tables) : { body: Buffer.alloc(0), contentType: 'text/plain' };
  const transport = url.protocol === 'https:' ? https : http;
  const pool = q.reuseConnection ? keptAlive : agents;
  const agent = url.protocol === 'https:' ? pool['https:'] : pool['http:'];
  const request = transport.request(url, {
    method: 'POST',
    agent,
    headers: {
      'Content-Type': contentType,
      'Content-Length': body.length,
      Authorization: `Basic ${Buffer.from(`${conn.username}:${conn.password}`).toString('base64')}`,
      ...(q.gzip ? { 'Accept-Encoding': 'gzip' } : {}),
    },
  });
  let answered: IncomingMessage | null = null;
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    // `on`, not `once`: a destroyed request may report more than one error; the first one wins.
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (request.reusedSocket && answered === null && STALE_SOCKET_CODES.has(String(error.code))) staleSocketErrors.add(error);
      reject(error);
    });
    request.once('response', (res) => {
      if (res.statusCode === 200) {
        answered = res;
        return resolve(res);
      }
      readErrorBody(res).then(
        (text) => reject(new Error(`ClickHouse answered ${res.statusCode}: ${text}`)),
        (err: unknown) => reject(new Error(`ClickHouse answered ${res.statusCode}`, { cause: err })),
      );
    });
  });
  // Without an error, destroying emits no 'error' event that nobody might be listening for.
  const abort = (reason?: Error) => {
    answered?.destroy(reason);
    request.destroy(answered ? undefined : reason);
  };
  if (q.signal) {
    const signal = q.signal;
    const onAbort = () => abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) onAbort();
    else {
      signal.addEventListener('abort', onAbort, { once: true });
      request.once('close', () => signal.removeEventListener('abort', onAbort));
    }
  }
  request.end(body);
  return { response, abort: () => abort() };
}

/** The start of an error body, decompressed when ClickHouse gzipped it. */
async function readErrorBody(res: IncomingMessage): Promise<string> {
  // pipeline: a failure of the answer, or of its gzip, ends the read below with it.
  const source = res.headers['content-encoding'] === 'gzip' ? pipeline(res, createGunzip(), () => undefined) : res;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    if (size < MAX_ERROR_BYTES) chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, MAX_ERROR_BYTES).trim();
}

/** Runs a query and returns its whole (small) answer as text: for plans, kills and tests. */
export async function queryText(conn: ConnOptions, q: QueryRequest): Promise<string> {
  const res = await startQuery(conn, q).response;
  const chunks: Buffer[] = [];
  for await (const chunk of res as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}
