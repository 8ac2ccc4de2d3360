import { positiveInt } from './schemas.ts';

/** Deleting ranges of points, and the retention rules applied as deletions. */
export const deletionsSettings = {
  MERIDIAN_DELETE_MAX_POINTS: {
    schema: positiveInt,
    default: '10000000',
    doc: 'Most points one deletion (POST /api/v1/metrics/delete) may select, counted when it is asked; more gets 400: delete a narrower range or fewer metrics. Bounds the parts ClickHouse rewrites for one deletion while ingest goes on.',
  },
  MERIDIAN_POINTS_RETENTION_INTERVAL_MS: {
    schema: positiveInt,
    default: '3600000',
    doc: 'How often the ingest worker that projects points partition 0 applies the retention rules (PUT /api/v1/retention): for each rule, the raw points older than it keeps are deleted by one deletion in the log. Not bounded by MERIDIAN_DELETE_MAX_POINTS: the first run after a rule is set may delete a long history.',
  },
} as const;
