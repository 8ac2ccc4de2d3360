import type { Logger } from '@meridian/observability';
import { retry, RETRY_POLICIES } from '@meridian/retry';

/** Thrown out of a retry loop when the consumer is stopping: the work is left to the next owner. */
export class Stopping extends Error {}

/** Runs an attempt until it succeeds, backing off and heartbeating; gives up only when the consumer stops. */
export type Persist = <T>(what: string, attempt: () => Promise<T>) => Promise<T>;

/**
 * Persist for work done inside a consumer's handler: every failure is retried while the
 * partitions are ours, heartbeating between attempts so the group keeps the member; a stopping
 * consumer throws Stopping out of the loop (catch it where the handler returns).
 */
export function persistWhileRunning(logger: Logger, consumer: { isRunning(): boolean; heartbeat(): Promise<void> }): Persist {
  return (what, attempt) =>
    retry(attempt, {
      ...RETRY_POLICIES.projector,
      retriable: () => {
        if (!consumer.isRunning()) throw new Stopping(`${what}: stopping`);
        return true;
      },
      onRetry: (error, n, delay) => logger.warn({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
      wait: (ms) => sleepWithHeartbeat(ms, () => consumer.heartbeat()),
    });
}

/** Waits `ms` inside a consumer's handler, heartbeating every second so the group keeps the member. */
export async function sleepWithHeartbeat(ms: number, heartbeat: () => Promise<void>): Promise<void> {
  for (let left = ms; left > 0; left -= 1000) {
    await new Promise((r) => setTimeout(r, Math.min(1000, left)));
    await heartbeat();
  }
}
