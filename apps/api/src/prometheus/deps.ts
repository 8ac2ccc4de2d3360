import { rollupMinRangeMs } from '@meridian/config';
import type { ApiParts } from '../api-parts.ts';
import type { PromqlDeps } from './execute.ts';

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
    rollupMinRangeMs: rollupMinRangeMs(settings.MERIDIAN_PROMQL_ROLLUP_MIN_RANGE),
    maxBodyBytes: settings.MERIDIAN_MAX_SMALL_JSON_BODY_BYTES,
  };
}
