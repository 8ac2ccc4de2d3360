import type { Settings } from '@meridian/config';

/** The points projector's options, compiled once when the worker is composed (../options.ts). */
export type ProjectorOptions = {
  /** Rows of one insert at most, one Native block, one part (MERIDIAN_PROJECTOR_BATCH_ROWS, 500000). */
  readonly batchRows: number;
  /** How long a fetch waits for more records before it answers, 0 for not at all (MERIDIAN_PROJECTOR_FETCH_WAIT_MS, 0). */
  readonly fetchWaitMs: number;
  /** The consumer group's session timeout (KAFKA_SESSION_TIMEOUT_MS, 10000). */
  readonly sessionTimeoutMs: number;
  /** A third of the session timeout, at most 3 s: three heartbeats may fail before the group gives up on the member. */
  readonly heartbeatIntervalMs: number;
  /** Stage tables older than this are abandoned (MERIDIAN_STAGE_TTL_MS). */
  readonly stageTtlMs: number;
  /** How often abandoned stages are looked for (MERIDIAN_STAGE_SWEEP_INTERVAL_MS). */
  readonly stageSweepIntervalMs: number;
};

export function projectorOptions(settings: Settings): ProjectorOptions {
  return {
    batchRows: settings.MERIDIAN_PROJECTOR_BATCH_ROWS,
    fetchWaitMs: settings.MERIDIAN_PROJECTOR_FETCH_WAIT_MS,
    sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS,
    heartbeatIntervalMs: Math.min(3000, Math.floor(settings.KAFKA_SESSION_TIMEOUT_MS / 3)),
    stageTtlMs: settings.MERIDIAN_STAGE_TTL_MS,
    stageSweepIntervalMs: settings.MERIDIAN_STAGE_SWEEP_INTERVAL_MS,
  };
}

/**
 * What a waiting fetch waits for (MERIDIAN_PROJECTOR_FETCH_WAIT_MS): more than pushes bring in a
 * short wait (4 producers of 1,000-point bodies write about 0.3 MB a second to the topic), so the
 * wait is what ends it under live traffic, and a projector behind the log gets full fetches at once.
 */
const FETCH_MIN_BYTES = 1024 * 1024;
/** With no wait: how long a fetch finding no record waits for one. */
const IDLE_WAIT_MS = 500;

/** The fetch's wait: the setting's, or at once (minBytes 1) when it is 0. */
export function fetchWait(waitMs: number): { readonly maxWaitTimeMs: number; readonly minBytes?: number } {
  return waitMs > 0 ? { maxWaitTimeMs: waitMs, minBytes: FETCH_MIN_BYTES } : { maxWaitTimeMs: IDLE_WAIT_MS };
}
