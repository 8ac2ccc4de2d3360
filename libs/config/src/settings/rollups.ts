import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** The seal pass of the rollups (migration 011), run by the ingest worker. */
export const rollupsSettings = {
  MERIDIAN_ROLLUP_SEAL_INTERVAL_MS: {
    schema: positiveInt,
    default: '60000',
    doc: 'How often the ingest worker that projects points partition 0 seals the closed 1m and 1h rollup buckets not sealed at their count yet: each gets a row of the aggregates of its deduplicated points, which a download at resolution 1m or 1h then reads instead of checking the bucket again (a year at 1h of one metric: tens of milliseconds instead of seconds). An insert into a sealed bucket unseals it until the next pass.',
  },
  MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS: {
    schema: z.coerce.number().int().min(1).max(10_000_000),
    default: '100000',
    doc: "Most buckets one seal pass seals per resolution (1 to 10,000,000); the next pass goes on where it stopped. Bounds a pass's work: sealing a bucket costs about what reading it with the exactness check costs (the figures are in the benchmarks' rollups section).",
  },
} as const;
