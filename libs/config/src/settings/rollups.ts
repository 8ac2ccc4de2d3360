import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** The seal pass of the rollups (migration 011), run by the ingest worker. */
export const rollupsSettings = {
  MERIDIAN_ROLLUP_SEAL_INTERVAL_MS: {
    schema: positiveInt,
    default: '300000',
    doc: 'How often the ingest worker that projects points partition 0 seals the closed rollup buckets (of the resolutions MERIDIAN_ROLLUP_SEAL_RESOLUTIONS names) not sealed at their count yet: each gets a row of the aggregates of its deduplicated points, which a download at that resolution (and a PromQL window on its buckets) then reads instead of checking the bucket again (a year at 1h of one metric: tens of milliseconds instead of seconds). An insert into a sealed bucket unseals it until the next pass. Each pass reads the count of every bucket of its resolutions, so its cost grows with the buckets held (see the rollups page).',
  },
  MERIDIAN_ROLLUP_SEAL_RESOLUTIONS: {
    schema: z.enum(['1h', '1h,1m', 'off']),
    default: '1h',
    doc: "The rollups the seal pass seals: `1h` (the default), `1h,1m`, or `off` (no pass: every read checks its buckets, as before seals). The 1m rollup holds 60 times the 1h rollup's buckets, and a pass reads every bucket's count: a year of 1,000 series is about 527M 1m buckets, minutes of ClickHouse CPU a pass, against seconds for 1h.",
  },
  MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS: {
    schema: z.coerce.number().int().min(1).max(10_000_000),
    default: '100000',
    doc: "Most buckets one seal pass seals per resolution (1 to 10,000,000); the next pass goes on where it stopped. Bounds a pass's work: sealing a bucket costs about what reading it with the exactness check costs (the figures are in the benchmarks' rollups section).",
  },
} as const;
