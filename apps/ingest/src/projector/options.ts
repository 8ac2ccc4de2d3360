import type { Settings } from '@meridian/config';

/** What the projector reads of the settings, compiled once when it starts. */
export type ProjectorOptions = {
  /** Rows of one insert at most (MERIDIAN_PROJECTOR_BATCH_ROWS): one Native block, one part. */
  readonly batchRows: number;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  /** Stage tables older than this are abandoned (MERIDIAN_STAGE_TTL_MS). */
  readonly stageTtlMs: number;
  readonly stageSweepIntervalMs: number;
};

export function projectorOptions(settings: Settings): ProjectorOptions {
  return {
    batchRows: settings.MERIDIAN_PROJECTOR_BATCH_ROWS,
    sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS,
    heartbeatIntervalMs: Math.min(3000, Math.floor(settings.KAFKA_SESSION_TIMEOUT_MS / 3)),
    stageTtlMs: settings.MERIDIAN_STAGE_TTL_MS,
    stageSweepIntervalMs: settings.MERIDIAN_STAGE_SWEEP_INTERVAL_MS,
  };
}
