import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from './config.ts';

/** An api answer outside 2xx, with its problem+json body when it had one. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem | null;

  constructor(status: number, problem: Problem | null, text: string) {
    super(`${status} ${problem?.title ?? ''}${problem?.detail ? `: ${problem.detail}` : text && !problem ? `: ${text.slice(0, 300)}` : ''}`.trim());
    this.status = status;
    this.problem = problem;
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

/** Seconds of Retry-After (delta form; an HTTP date is taken as 1 s), capped at a minute. */
function retryAfterMs(res: Response): number {
  const seconds = Number(res.headers.get('Retry-After'));
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 60) * 1000 : 1000;
}

/**
 * An api client: the bearer key on every request; 429 (and 503 for idempotent requests) waits
 * out Retry-After and tries again, as do network failures of idempotent requests, `retries`
 * times at most.
 */
export function apiClient(connection: Connection, retries: number): ApiClient {
  const send = async (path: string, options: RequestOptions): Promise<Response> => {
    const url = new URL(`${connection.url}${path}`);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    for (let attempt = 0; ; attempt++) {
      const made = options.body?.();
      let res: Response;
      try {
        res = await fetch(url, {
          method: options.method ?? 'GET',
          headers: { Authorization: `Bearer ${connection.apiKey}`, ...(made?.contentType ? { 'Content-Type': made.contentType } : {}), ...options.headers },
          body: made?.body ?? null,
          ...(made && made.body instanceof ReadableStream ? { duplex: 'half' } : {}),
          signal: options.signal ?? null,
        });
      } catch (error) {
        if (!options.idempotent || attempt >= retries || options.signal?.aborted) throw networkError(connection.url, error);
        await sleep(Math.min(500 * 2 ** attempt, 10_000));
        continue;
      }
      if (res.ok) return res;
      const retriable = res.status === 429 || (res.status === 503 && options.idempotent);
      if (retriable && attempt < retries) {
        await res.body?.cancel();
        await sleep(retryAfterMs(res));
        continue;
      }
      const text = await res.text().catch(() => '');
      let problem = null;
      try {
        problem = text ? JSON.parse(text) : null;
      } catch {
        /* not problem+json */
      }
      throw new ApiError(res.status, problem, text);
    }
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

function networkError(url: string, error: unknown): Error {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return new Error(`cannot reach ${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, { cause: error });
}
