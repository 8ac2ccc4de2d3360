import type { Settings } from '@meridian/config';

/** The seal pass's options, compiled once at start. */
export type RollupSealOptions = {
  /** The pause between two seal passes (MERIDIAN_ROLLUP_SEAL_INTERVAL_MS, 60000). */
  readonly intervalMs: number;
  /** Most buckets one pass seals per resolution (MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS, 100000). */
  readonly maxBuckets: number;
};

export function rollupSealOptions(settings: Settings): RollupSealOptions {
  return { intervalMs: settings.MERIDIAN_ROLLUP_SEAL_INTERVAL_MS, maxBuckets: settings.MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS };
}
