import type { Settings } from '@meridian/config';

/** The points projector's options, compiled once when the worker is composed (../options.ts). */
export type ProjectorOptions = {
  /** Rows of one insert at most, one Native block, one part (MERIDIAN_PROJECTOR_BATCH_ROWS, 500000). */
  readonly batchRows: number;
  /** How long a fetch waits for more records before it answers, 0 for not at all (MERIDIAN_PROJECTOR_FETCH_WAIT_MS, 250). */
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
