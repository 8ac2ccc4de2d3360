import type { Logger } from '@meridian/observability';
import { retry, RETRY_POLICIES, waitingMayCure } from '@meridian/retry';

export type UntilDoneOptions = {
  /** Whether a failure may pass if waited out; one that may not is thrown at once. Default: waitingMayCure. */
  readonly retriable?: (error: unknown) => boolean;
  /** Most attempts before the last failure is thrown (a CLI gives up; a server waits forever). Default: no limit. */
  readonly attempts?: number;
};

/**
 * Runs `attempt` until it succeeds (RETRY_POLICIES.start: backing off up to 5 s), logging each
 * failure. For start-up work a process must not die of (a dependency still starting, topics
 * another process is creating at the same moment, a fresh Kafka still electing its leaders); a
 * failure that waiting cannot cure (see waitingMayCure) is thrown at once. `attempt` must be
 * safe to run again after it failed.
 */
export async function untilDone<T>(what: string, attempt: () => Promise<T>, logger: Logger, options: UntilDoneOptions = {}): Promise<T> {
  return retry(attempt, {
    ...RETRY_POLICIES.start,
    ...(options.attempts === undefined ? {} : { attempts: options.attempts }),
    retriable: options.retriable ?? waitingMayCure,
    // A passing outage is a warning; one that lasts (a wrong endpoint or credentials) an error.
    onRetry: (error, n, delay) => logger[n <= 10 ? 'warn' : 'error']({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
  });
}
