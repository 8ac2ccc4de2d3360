import type { Logger } from '@meridian/observability';
import { startPeriodic } from '../periodic.ts';

export type StageSweeperOptions = {
  /** Drops the stages made at least this long ago; returns their names (PointsStages.sweep). */
  readonly sweep: (ageMs: number) => Promise<string[]>;
  /** Stage tables older than this are abandoned (MERIDIAN_STAGE_TTL_MS, at least the upload time budget). */
  readonly ttlMs: number;
  /** How often it looks (MERIDIAN_STAGE_SWEEP_INTERVAL_MS). */
  readonly intervalMs: number;
  readonly logger: Logger;
};

/**
 * Drops the stage tables of staged uploads that were abandoned: a job
 * killed before its commit leaves its stages, which no seal will ever attach. Safe whatever
 * it drops: a stage still needed by a seal is refilled from the log there. A failed sweep is
 * logged and tried again at the next interval.
 */
export function startStageSweeper(options: StageSweeperOptions): { stop(): Promise<void> } {
  return startPeriodic(async () => {
    try {
      const dropped = await options.sweep(options.ttlMs);
      if (dropped.length > 0) options.logger.info({ dropped }, 'abandoned stage tables dropped');
    } catch (error) {
      options.logger.warn({ err: error }, 'sweeping stage tables failed; trying again at the next interval');
    }
  }, options.intervalMs);
}
