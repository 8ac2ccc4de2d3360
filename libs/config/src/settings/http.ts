import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** What one request may send and how long it may take, before any route sees it. */
export const httpSettings = {
  MERIDIAN_MAX_SMALL_JSON_BODY_BYTES: {
    schema: positiveInt,
    default: '16384',
    doc: 'Largest JSON body of an account or file-metadata request, in bytes (413 as soon as Content-Length or the bytes read pass it); only the JSON upload takes MERIDIAN_MAX_JSON_BODY_BYTES.',
  },
  MERIDIAN_BODY_BYTES_IN_FLIGHT: {
    schema: z.coerce.number().int().min(1_048_576),
    default: '33554432',
    doc: "Bytes of request bodies one api instance holds whole in memory at once, over every user: JSON uploads and the telemetry protocols' pushes reserve their Content-Length (without one, their route's limit) before their body is read, until they are answered. Past it a request waits, unread, at most MERIDIAN_BODY_WAIT_MS, then gets 503 with Retry-After; one user holds at most half of it beside their first body (429 past that). What a body holds while decoded is a few times its bytes, so this bounds most of the api's memory under many producers. At least MERIDIAN_MAX_JSON_BODY_BYTES and MERIDIAN_PUSH_MAX_BYTES (checked at start).",
  },
  MERIDIAN_BODY_WAIT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: 'Longest a JSON upload or a push waits for room under MERIDIAN_BODY_BYTES_IN_FLIGHT before its 503.',
  },
  MERIDIAN_HTTP_HEADERS_TIMEOUT_MS: {
    schema: positiveInt,
    default: '20000',
    doc: 'Longest a client may take to send a request line and headers before the connection is answered 408 and closed.',
  },
  MERIDIAN_HTTP_KEEP_ALIVE_TIMEOUT_MS: {
    schema: positiveInt,
    default: '5000',
    doc: 'How long an idle keep-alive connection is kept open waiting for its next request.',
  },
  MERIDIAN_HTTP_IDLE_TIMEOUT_MS: {
    schema: positiveInt,
    default: '60000',
    doc: 'Longest a connection may stay without a byte in either direction while a request is open, streaming uploads and downloads included; then it is closed.',
  },
  MERIDIAN_HTTP_MIN_BODY_BYTES_PER_SECOND: {
    schema: z.coerce.number().int().min(0),
    default: '16384',
    doc: "Slowest average rate at which a request body may arrive, counted from the request's start once MERIDIAN_HTTP_IDLE_TIMEOUT_MS has passed; a slower body has its connection closed (0 turns it off). Bounds a client trickling an upload just under the idle timeout, without a cap on how long a legitimate large upload may take.",
  },
  MERIDIAN_MAX_URL_BYTES: {
    schema: positiveInt,
    default: '8192',
    doc: 'Longest request target (path and query), in bytes; longer gets 414 problem+json.',
  },
  MERIDIAN_MAX_HEADER_BYTES: {
    schema: z.coerce.number().int().min(1024).max(1_048_576),
    default: '16384',
    doc: "Largest request line plus headers, in bytes (Node's maxHeaderSize); larger gets 431 problem+json and the connection is closed.",
  },
  MERIDIAN_REQUEST_TIMEOUT_MS: {
    schema: positiveInt,
    default: '30000',
    doc: 'Longest a non-streaming request may take before the api answers 503 /problems/timeout; streaming uploads and downloads are exempt.',
  },
  MERIDIAN_RATE_LIMIT_PER_SECOND: {
    schema: z.coerce.number().min(0).max(1_000_000),
    default: '50',
    doc: 'Requests per second each authenticated user may sustain (token bucket refill rate; 0 turns rate limiting off). Above it: 429 with Retry-After.',
  },
  MERIDIAN_RATE_LIMIT_BURST: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '100',
    doc: 'Requests an authenticated user may send at once before the per-second rate applies (token bucket size).',
  },
  MERIDIAN_MAX_API_KEYS_PER_USER: {
    schema: positiveInt,
    default: '100',
    doc: 'API keys (not revoked) a user may hold; one more gets 409 /problems/limit-reached until a key is revoked.',
  },
} as const;
