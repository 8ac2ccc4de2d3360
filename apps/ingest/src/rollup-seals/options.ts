import type { Resolution } from '@meridian/clickhouse';
import type { Settings } from '@meridian/config';

/** The seal pass's options, compiled once at start. */
export type RollupSealOptions = {
  /** The pause between two seal passes (MERIDIAN_ROLLUP_SEAL_INTERVAL_MS, 300000). */
  readonly intervalMs: number;
  /** Most buckets one pass seals per resolution (MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS, 100000). */
  readonly maxBuckets: number;
  /** The rollups it seals, none when off (MERIDIAN_ROLLUP_SEAL_RESOLUTIONS, 1h). */
  readonly resolutions: readonly Resolution[];
};

export function rollupSealOptions(settings: Settings): RollupSealOptions {
  const named = settings.MERIDIAN_ROLLUP_SEAL_RESOLUTIONS;
  return {
    intervalMs: settings.MERIDIAN_ROLLUP_SEAL_INTERVAL_MS,
    maxBuckets: settings.MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS,
    resolutions: named === 'off' ? [] : (named.split(',') as Resolution[]),
  };
}
