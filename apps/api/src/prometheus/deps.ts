import { rollupMinRangeMs } from '@meridian/config';
import type { RollupPolicy } from '@meridian/domain';
import type { ApiParts } from '../api-parts.ts';
import type { PromqlDeps } from './execute.ts';

function rollupPolicy(minRange: string, minPointsPerBucket: number): RollupPolicy | null {
  const minRangeMs = rollupMinRangeMs(minRange);
  return minRangeMs === null ? null : { minRangeMs, minPointsPerBucket };
}

export function promqlDeps({ services, settings }: ApiParts): PromqlDeps {
  return {
    conn: services.clickhouseOptions,
    catalog: services.catalog,
    limits: {
      maxSamples: settings.MERIDIAN_PROMQL_MAX_SAMPLES,
      maxSeries: settings.MERIDIAN_PROMQL_MAX_SERIES,
      maxPointsPerSeries: settings.MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES,
      timeoutMs: settings.MERIDIAN_PROMQL_TIMEOUT_MS,
    },
    reduceRatio: settings.MERIDIAN_PROMQL_REDUCE_RATIO,
    rollups: rollupPolicy(settings.MERIDIAN_PROMQL_ROLLUP_MIN_RANGE, settings.MERIDIAN_PROMQL_ROLLUP_MIN_POINTS_PER_BUCKET),
    maxBodyBytes: settings.MERIDIAN_MAX_SMALL_JSON_BODY_BYTES,
  };
}
