import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** What one PromQL query may cost. */
export const prometheusSettings = {
  MERIDIAN_PROMQL_MAX_SAMPLES: {
    schema: z.coerce.number().int().min(1000).max(100_000_000),
    default: '5000000',
    doc: 'Most samples (stored points) one PromQL query may read from ClickHouse, over all its selectors; past it the query gets 422 (errorType execution) naming the setting. The samples are held in the api while the query is evaluated: about 16 bytes each.',
  },
  MERIDIAN_PROMQL_MAX_SERIES: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '10000',
    doc: 'Most series one PromQL selector may choose and one query may answer (and the most series, label names or values GET series, labels and label values list); past it: 422 (errorType execution) naming the setting.',
  },
  MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES: {
    schema: z.coerce.number().int().min(10).max(1_000_000),
    default: '11000',
    doc: "Most steps of a PromQL range query ((end − start) / step); more gets 400 (errorType bad_data) with Prometheus' own message, whose bound is the same 11,000 by default.",
  },
  MERIDIAN_PROMQL_REDUCE_RATIO: {
    schema: z.coerce.number().min(0).max(1e12),
    default: '0',
    doc: 'When a PromQL range function (rate, increase, delta, irate, resets, changes, the _over_time functions but quantile_over_time) is reduced per series as its samples arrive, to its value at every step, rather than its samples kept and evaluated step by step: when the samples in range (estimated from the catalog) are at least this many times the values it answers (series × steps). 0 always reduces (both ways give the same answer; reducing is the cheaper); a huge value never does.',
  },
  MERIDIAN_PROMQL_TIMEOUT_MS: {
    schema: positiveInt,
    default: '20000',
    doc: "Longest one PromQL query may run, its ClickHouse reads (stopped with KILL QUERY) and its evaluation included; past it: 503 (errorType timeout). Keep it below MERIDIAN_REQUEST_TIMEOUT_MS so the answer is Prometheus' error, not the api's. A smaller `timeout` parameter of the request wins.",
  },
} as const;
