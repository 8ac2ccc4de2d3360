import { setTimeout as sleep } from 'node:timers/promises';
import { classify, retry, RETRY_POLICIES } from '@meridian/retry';
import type { Connection } from './config.ts';

/** An api answer outside 2xx, with its problem+json body when it had one. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem | null;
  /** 429 and 503 mean "later" (classify() calls them transient). */
  readonly retriable: boolean;
  /** The answer's Retry-After, in ms (null without one). */
  readonly retryAfterMs: number | null;

  constructor(status: number, problem: Problem | null, text: string, retryAfterMs: number | null = null) {
    super(`${status} ${problem?.title ?? ''}${problem?.detail ? `: ${problem.detail}` : text && !problem ? `: ${text.slice(0, 300)}` : ''}`.trim());
    this.status = status;
    this.problem = problem;
    this.retriable = status === 429 || status === 503;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * A request that did not reach the api or was cut: it may pass if sent again (whether it may be
 * sent again is the request's to say), unless the address names no host (ENOTFOUND).
 */
export class NetworkError extends Error {
  readonly retriable: boolean;
  readonly code: string | undefined;

  constructor(message: string, code: string | undefined, options: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.retriable = code !== 'ENOTFOUND';
  }
}

type Problem = { type?: string; title?: string; detail?: string; errors?: unknown[] };

export type RequestOptions = {
  readonly method?: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly headers?: Readonly<Record<string, string>>;
  /** Made anew for every attempt: a stream cannot be sent twice. */
  readonly body?: () => { body: ReadableStream | FormData | string; contentType?: string };
  /** Whether a request cut by the network may be sent again (GETs, uploads under an Idempotency-Key). */
  readonly idempotent: boolean;
  readonly signal?: AbortSignal;
};

export type ApiClient = {
  readonly url: string;
  /** The response of a 2xx answer (its body unread); anything else throws ApiError. */
  send(path: string, options: RequestOptions): Promise<Response>;
  json<T>(path: string, options: RequestOptions & { json?: unknown }): Promise<T>;
};

/** Seconds of Retry-After (delta form; an HTTP date is taken as 1 s), capped at a minute; null without one. */
function retryAfterMs(res: Response): number | null {
  const header = res.headers.get('Retry-After');
  if (header === null) return null;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 60) * 1000 : 1000;
}

export type ClientOptions = {
  /** Times a request is tried again (MERIDIAN_CLI_RETRIES). */
  readonly retries: number;
  /** Ctrl-C: stops requests and the waits between them. */
  readonly interrupt?: AbortSignal | undefined;
  /** Told of each retry after a network failure or a 503, as a line for stderr (429s, the api's pacing, are not told). */
  readonly report?: ((line: string) => void) | undefined;
};

/**
 * An api client: the bearer key on every request. 429 (and 503, and network failures, for
 * idempotent requests) are tried again, `retries` times at most, after the answer's Retry-After
 * or else the CLI's backoff (RETRY_POLICIES.cli). An address with no host fails at once.
 */
export function apiClient(connection: Connection, { retries, interrupt, report }: ClientOptions): ApiClient {
  const once = async (url: URL, options: RequestOptions, signal: AbortSignal | null): Promise<Response> => {
    const made = options.body?.();
    let res: Response;
    try {
      res = await fetch(url, {
        method: options.method ?? 'GET',
        headers: { Authorization: `Bearer ${connection.apiKey}`, ...(made?.contentType ? { 'Content-Type': made.contentType } : {}), ...options.headers },
        body: made?.body ?? null,
        ...(made && made.body instanceof ReadableStream ? { duplex: 'half' } : {}),
        signal,
      });
    } catch (error) {
      throw networkError(connection.url, error);
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    let problem = null;
    try {
      problem = text ? JSON.parse(text) : null;
    } catch {
      /* not problem+json */
    }
    throw new ApiError(res.status, problem, text, retryAfterMs(res));
  };
  const send = (path: string, options: RequestOptions): Promise<Response> => {
    const url = new URL(`${connection.url}${path}`);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const signal = signalOf(options.signal, interrupt);
    return retry(() => once(url, options, signal), {
      ...RETRY_POLICIES.cli,
      attempts: retries + 1,
      // A 429 was refused before any work; a 503 or a cut request may have done some, so only
      // a request that may be repeated (a GET, an upload under its Idempotency-Key) is sent again.
      retriable: (error) => classify(error) === 'transient' && (options.idempotent || (error instanceof ApiError && error.status === 429)),
      delayOf: (error) => (error instanceof ApiError && error.retryAfterMs !== null ? error.retryAfterMs : undefined),
      onRetry: (error, n, delayMs) => {
        if (error instanceof ApiError && error.status === 429) return;
        report?.(`${(error as Error).message}; retrying ${n}/${retries} in ${(delayMs / 1000).toFixed(1)} s`);
      },
      // Ctrl-C ends a wait between attempts too, not only a request.
      ...(signal ? { signal } : {}),
      wait: (ms) => sleep(ms, undefined, signal ? { signal } : {}),
    });
  };
  return {
    url: connection.url,
    send,
    async json<T>(path: string, options: RequestOptions & { json?: unknown }): Promise<T> {
      const body = options.json === undefined ? options.body : () => ({ body: JSON.stringify(options.json), contentType: 'application/json' });
      const res = await send(path, { ...options, ...(body ? { body } : {}) });
      const text = await res.text();
      return (text ? JSON.parse(text) : undefined) as T;
    },
  };
}

/** The request's own signal and the process's interrupt, either of which stops it. */
function signalOf(own: AbortSignal | undefined, interrupt: AbortSignal | undefined): AbortSignal | null {
  if (own && interrupt) return AbortSignal.any([own, interrupt]);
  return own ?? interrupt ?? null;
}

function networkError(url: string, error: unknown): Error {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return new NetworkError(`cannot reach ${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, cause?.code, { cause: error });
}
