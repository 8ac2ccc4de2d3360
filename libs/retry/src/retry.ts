import { setTimeout as sleep } from 'node:timers/promises';
import { waitingMayCure } from './transient.ts';

export type RetryPolicy = {
  /** Delay before the second attempt. */
  readonly initialDelayMs: number;
  /** Each next delay is the previous one times this. */
  readonly factor: number;
  /** Longest delay between two attempts. */
  readonly maxDelayMs: number;
  /** Each delay is varied at random by up to this fraction, either way (0: none). */
  readonly jitter: number;
  /** Most attempts before the last failure is thrown. Default: no limit (retry forever). */
  readonly attempts?: number;
};

export type RetryOptions = RetryPolicy & {
  /**
   * Whether a failure may be retried; no bails out: the failure is thrown at once. It may also
   * throw (another error, such as "stopping") to end the retries. Default: waitingMayCure.
   */
  readonly retriable?: (error: unknown, attempt: number) => boolean;
  /** Called before each wait, to log the failure (attempt counts from 1). */
  readonly onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** A wait the failure itself names (an HTTP answer's Retry-After), taken instead of the backoff's; undefined: the backoff's. */
  readonly delayOf?: (error: unknown) => number | undefined;
  /** How to wait (a consumer heartbeats while it waits). Default: a timer. */
  readonly wait?: (ms: number) => Promise<unknown>;
  /** Stops the retries: the last failure is thrown instead of waiting again. */
  readonly signal?: AbortSignal;
};

/**
 * Runs `attempt` until it succeeds, waiting with exponential backoff and jitter between
 * failures. `attempt` receives its number (1, 2, ...) and must be safe to run again after it
 * failed. The last failure is thrown as it is, so callers see the error the work raised.
 */
export async function retry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const retriable = options.retriable ?? waitingMayCure;
  const wait = options.wait ?? sleep;
  const attempts = options.attempts ?? Number.POSITIVE_INFINITY;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (n >= attempts || options.signal?.aborted || !retriable(error, n)) throw error;
      const delay = options.delayOf?.(error) ?? delayBefore(n + 1, options);
      options.onRetry?.(error, n, delay);
      await wait(delay);
    }
  }
}

/** The wait before attempt `n` (n >= 2). */
function delayBefore(n: number, policy: RetryPolicy): number {
  const base = Math.min(policy.initialDelayMs * policy.factor ** (n - 2), policy.maxDelayMs);
  const varied = base * (1 + policy.jitter * (2 * Math.random() - 1));
  return Math.round(Math.min(varied, policy.maxDelayMs));
}
