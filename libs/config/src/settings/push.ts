import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** Small uploads and agents' writes, decided in the api and written to the log at once. */
export const pushSettings = {
  MERIDIAN_PUSH_MAX_BYTES: {
    schema: z.coerce
      .number()
      .int()
      .min(0)
      .max(16 * 1024 * 1024),
    default: '1048576',
    doc: 'Largest JSON upload body that takes the push path: decided in the api (an invalid one is answered 400 with its rows at once) and written to the log with its task in one transaction shared with the pushes arriving beside it, with no staging and no ingest worker run. Larger bodies, and files, are staged for the ingest worker. 0: every upload is staged.',
  },
  MERIDIAN_PUSH_MAX_LAG_POINTS: {
    schema: positiveInt,
    default: '10000000',
    doc: 'Points accepted (by every user, pushes and staged uploads) and not yet stored in ClickHouse past which a push gets 429 /problems/too-many with Retry-After: when ClickHouse or the projector falls behind, producers slow down instead of the backlog growing without end.',
  },
  MERIDIAN_PUSH_WRITERS: {
    schema: z.coerce.number().int().min(1).max(16),
    default: '2',
    doc: "Transactional writers of pushes in one api instance, each with one transaction under way at a time: the pushes that arrive while every writer is busy go together in the next transaction that starts, on the writer idle longest. Kafka refuses a writer's next transaction as concurrent until it has completed the last one's commit (a few ms after answering it, longer on a busy broker), and the writer then waits and asks again. More writers than transactions usually under way avoid that wait (4 with 4 producers), but split the pushes of many producers into more, smaller transactions: with 64 producers, 4 took about a fifth fewer points a second than 2. Each is a producer with its own connection.",
  },
  MERIDIAN_PUSH_TRANSACTION_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(1000).max(900_000),
    default: '10000',
    doc: 'How long Kafka lets a transaction of pushes stay open before it aborts it: an api instance that dies mid-transaction and is not restarted under the same MERIDIAN_API_INSTANCE holds back the readers of the partitions it wrote (the projector reads committed data only) at most this long.',
  },
  MERIDIAN_PROTOCOL_MAX_BYTES: {
    schema: z.coerce
      .number()
      .int()
      .min(65_536)
      .max(64 * 1024 * 1024),
    default: '8388608',
    doc: 'Bytes of one telemetry protocol request (remote write, OTLP, line protocol) once decompressed: a snappy body declaring more is refused before anything is allocated, a gzip body is cut at it; 413. The body as sent is bounded by MERIDIAN_PUSH_MAX_BYTES.',
  },
  MERIDIAN_PROTOCOL_MAX_SERIES: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '10000',
    doc: 'Distinct series one telemetry protocol request may write; more is a 413 for the whole request (Prometheus sends at most a few thousand a request by default).',
  },
  MERIDIAN_PROTOCOL_NAME_CACHE_ENTRIES: {
    schema: z.coerce.number().int().min(0).max(10_000_000),
    default: '100000',
    doc: "Series names an api instance keeps across remote write requests, keyed by the bytes of a series' labels as sent, so a series sent again (every scrape) is not named again: its labels are neither read nor sorted. Emptied when full; 0 keeps none. An entry holds its labels twice (as sent and as the name), a few hundred bytes for a scrape's series.",
  },
  MERIDIAN_PROTOCOL_MAX_SAMPLES: {
    schema: z.coerce.number().int().min(1).max(10_000_000),
    default: '100000',
    doc: 'Samples one telemetry protocol request may hold, stored or refused; more is a 413 for the whole request.',
  },
} as const;
