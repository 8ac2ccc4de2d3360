import type { RetryPolicy } from './retry.ts';

/**
 * Every backoff of the code base, in one place. Delays grow by `factor` from `initialDelayMs`
 * up to `maxDelayMs`, each varied by ±`jitter` so that processes failing together do not
 * retry together (kafkajs does the same, with 0.2).
 */
export const RETRY_POLICIES = {
  /** Start-up work a process must not die of (untilDone): topics, followers, consumers. */
  start: { initialDelayMs: 250, factor: 2, maxDelayMs: 5000, jitter: 0.2 },
  /** The live projector's writes and reads of ClickHouse: retried for as long as it owns its partitions. */
  projector: { initialDelayMs: 200, factor: 2, maxDelayMs: 5000, jitter: 0.2 },
  /** One upload stopped by storage or network trouble (MERIDIAN_UPLOAD_ATTEMPTS attempts). */
  upload: { initialDelayMs: 500, factor: 2, maxDelayMs: 10_000, jitter: 0.2 },
  /** A user CLI request cut by the network or answered 429/503 (MERIDIAN_CLI_RETRIES retries; a Retry-After replaces the delay). */
  cli: { initialDelayMs: 500, factor: 2, maxDelayMs: 10_000, jitter: 0.2 },
  /** A whole object put to storage, cut by a reset connection or refused by a busy server: 3 attempts within about 0.2 s. */
  storagePut: { initialDelayMs: 50, factor: 2, maxDelayMs: 200, jitter: 0.2, attempts: 3 },
  /** A rebuild's insert into its new generation: 5 attempts, then the rebuild fails. */
  rebuildInsert: { initialDelayMs: 500, factor: 2, maxDelayMs: 10_000, jitter: 0.2, attempts: 5 },
} as const satisfies Record<string, RetryPolicy>;

/** For unit tests of code that retries: the same shape, milliseconds instead of seconds. */
export const FAST_RETRY = { initialDelayMs: 1, factor: 2, maxDelayMs: 5, jitter: 0 } as const satisfies RetryPolicy;
