import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import type { Settings } from '@meridian/config';
import type { Logger } from '@meridian/observability';
import { problemTypes, problemTypeUri, type ProblemType } from './problem.ts';
import { headerOverflowDetail } from './url-length.ts';

/** How long the server waits for what, and how much it reads before a route runs. */
export type HttpServerOptions = {
  /** Request line and headers must arrive within this (408). */
  readonly headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** A connection with no byte in either direction for this long is closed, streaming routes included. */
  readonly idleTimeoutMs: number;
  /** A request body slower than this on average, once idleTimeoutMs has passed, has its connection closed; 0: no check. */
  readonly minBodyBytesPerSecond: number;
  /** Request line plus headers at most (Node's maxHeaderSize; 431 above it). */
  readonly maxHeaderBytes: number;
};

export function httpServerOptions(settings: Settings): HttpServerOptions {
  return {
    headersTimeoutMs: settings.MERIDIAN_HTTP_HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: settings.MERIDIAN_HTTP_KEEP_ALIVE_TIMEOUT_MS,
    idleTimeoutMs: settings.MERIDIAN_HTTP_IDLE_TIMEOUT_MS,
    minBodyBytesPerSecond: settings.MERIDIAN_HTTP_MIN_BODY_BYTES_PER_SECOND,
    maxHeaderBytes: settings.MERIDIAN_MAX_HEADER_BYTES,
  };
}

/** How often open request bodies are checked against the minimum rate. */
const BODY_RATE_CHECK_MS = 1000;

/**
 * The HTTP server of an app (the api, or the admin listener), with every timeout and size set
 * from the options. Node's requestTimeout (300 s by default) is off: it would cut a legitimate
 * 5 GB upload. A slow client is bounded instead by the idle timeout (nothing for idleTimeoutMs)
 * and the minimum body rate (a trickle just under the idle timeout), which bounds how long a
 * body may take by its size, not by a fixed duration.
 */
export function createHttpServer(options: HttpServerOptions, app: Koa, logger?: Logger): Server {
  // Koa's callback catches its own rejections (its error handling answers them).
  // eslint-disable-next-line @typescript-eslint/no-misused-promises
  const handler: (req: IncomingMessage, res: ServerResponse) => void = app.callback();
  const server = createServer(
    {
      maxHeaderSize: options.maxHeaderBytes,
      headersTimeout: options.headersTimeoutMs,
      requestTimeout: 0,
      connectionsCheckingInterval: Math.min(1000, options.headersTimeoutMs),
    },
    handler,
  );
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.timeout = options.idleTimeoutMs; // with no 'timeout' listener, Node destroys the idle socket
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => answerClientError(error, socket, options.maxHeaderBytes));
  server.on('connection', lingerOnClose);
  if (options.minBodyBytesPerSecond > 0) watchBodyRates(server, options, logger);
  return server;
}

/** How long a closing connection keeps reading what its client still sends (see lingerOnClose). */
const LINGER_MS = 2000;

/**
 * A request refused before its body was read is answered with Connection: close, and Node then
 * closes the socket as soon as the answer is written. With the client's body still arriving,
 * that close resets the connection (unread bytes), and the reset can reach the client before
 * it reads the answer: it sees EPIPE or ECONNRESET instead of its 413. So the close lingers,
 * as nginx's does: the answer and a FIN go out, what the client still sends is read and
 * dropped, and the socket is destroyed when the client closes or after LINGER_MS at the most.
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingeringClose(this: Socket) {
    this.end();
    this.resume();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
  };
}

/**
 * Node's own answer to a request it cannot parse is a bare status line and a reset. Here it
 * is problem+json with Connection: close: 431 for a request line plus headers over the
 * limit, 408 for headers that did not arrive in time, 400 for anything else malformed.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex, maxHeaderBytes: number): void {
  // A response already under way on this connection cannot be followed by another one.
  const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (error.code === 'ECONNRESET' || !socket.writable || answering) {
    socket.destroy();
    return;
  }
  const [type, detail]: [ProblemType, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['header_too_large', headerOverflowDetail(maxHeaderBytes)]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'the request line and headers did not arrive in time']
        : ['validation', 'the request is not well-formed HTTP/1.1'];
  const { status, title } = problemTypes[type];
  const body = JSON.stringify({ type: problemTypeUri(type), title, status, detail });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // Read what the client is still sending, so the close does not reset the connection before
  // it reads the answer; the idle timeout ends a client that never stops.
  socket.resume();
}

/**
 * Closes the connection of a request whose body arrives slower than the minimum average rate,
 * counted from the request's start once the idle timeout has passed (the grace: a body may
 * start late). Bytes are counted on the socket, so no data listener changes how routes read.
 */
function watchBodyRates(server: Server, options: HttpServerOptions, logger: Logger | undefined): void {
  const open = new Map<IncomingMessage, { readonly startedAt: number; readonly bytesBefore: number }>();
  server.on('request', (req: IncomingMessage, res) => {
    open.set(req, { startedAt: performance.now(), bytesBefore: req.socket.bytesRead });
    res.once('close', () => open.delete(req));
  });
  const timer = setInterval(() => {
    const now = performance.now();
    for (const [req, { startedAt, bytesBefore }] of open) {
      if (req.complete || req.socket.destroyed) {
        open.delete(req);
        continue;
      }
      const elapsedMs = now - startedAt;
      if (elapsedMs < options.idleTimeoutMs) continue;
      const rate = (req.socket.bytesRead - bytesBefore) / (elapsedMs / 1000);
      if (rate >= options.minBodyBytesPerSecond) continue;
      open.delete(req);
      logger?.warn(
        { method: req.method, path: req.url?.split('?')[0], bytes_per_second: Math.round(rate) },
        'request body slower than MERIDIAN_HTTP_MIN_BODY_BYTES_PER_SECOND; connection closed',
      );
      req.socket.destroy();
    }
  }, BODY_RATE_CHECK_MS);
  timer.unref();
  server.once('close', () => clearInterval(timer));
}
