import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** Receiving uploads in the api, and running staged ones in the ingest worker. */
export const uploadsSettings = {
  MERIDIAN_MAX_JSON_BODY_BYTES: {
    schema: positiveInt,
    default: '16777216',
    doc: 'Largest JSON request body, in bytes (413 above it).',
  },
  MERIDIAN_MAX_UPLOAD_BYTES: {
    schema: positiveInt,
    default: '5000000000',
    doc: 'Largest file upload (a metrics file or a defined file), in bytes (413 above it); the file is streamed to MinIO, never held in memory.',
  },
  MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD: {
    schema: positiveInt,
    default: '100000',
    doc: 'Most values in one JSON upload (413 above it); larger sets go as a file.',
  },
  MERIDIAN_JSON_UPLOAD_CHECK_WORKERS: {
    schema: z.coerce.number().int().min(1).max(16),
    default: '1',
    doc: 'Worker threads that parse and hash JSON upload bodies off the event loop; more uploads than this wait their turn.',
  },
  MERIDIAN_JSON_UPLOAD_CHECK_HEAP_MB: {
    schema: z.coerce.number().int().min(32).max(16384),
    default: '256',
    doc: 'Heap of each JSON upload check worker, in MB; a backstop (a worker that runs out is replaced): a body is parsed only when its JSON punctuation fits MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD values, which bounds what a parse allocates.',
  },
  MERIDIAN_JSON_UPLOAD_CHECK_INLINE_BYTES: {
    schema: z.coerce.number().int().min(0).max(1_048_576),
    default: '65536',
    doc: 'JSON upload bodies up to this many bytes are parsed and hashed on the event loop instead of a check worker (handing a small body to a worker and its answer back costs more than its check; 64 KiB holds the loop under a millisecond); 0 sends every body to a worker.',
  },
  MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: {
    schema: positiveInt,
    default: '8',
    doc: "Metric uploads (both upload routes, and the telemetry protocols' routes) whose bodies one api instance receives at once for one user; the next gets 429 /problems/too-many before its body is read.",
  },
  MERIDIAN_MAX_QUEUED_TASKS_PER_USER: {
    schema: positiveInt,
    default: '1000',
    doc: 'Unfinished (queued or running) tasks a user may have; a new upload past it gets 429 /problems/too-many until some finish.',
  },
  MERIDIAN_UPLOAD_BACKLOG_PER_USER: {
    schema: positiveInt,
    default: '8',
    doc: "Unfinished (queued or running) tasks of one user from which their next upload waits, before its body is read, until one of them ends: what one user can queue in front of the ingest worker, and so the freshness of what they upload (about this many over the uploads ingest finishes per second), stays bounded, and other users' uploads do not queue behind it. A producer faster than ingest gets slower 202s instead of a queue that grows with the run. At or above MERIDIAN_MAX_QUEUED_TASKS_PER_USER nothing waits: that cap refuses first.",
  },
  MERIDIAN_UPLOAD_BACKLOG_WAIT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: "Longest an upload waits under MERIDIAN_UPLOAD_BACKLOG_PER_USER (holding one of the user's MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER slots); then 429 /problems/too-many with Retry-After.",
  },
  MERIDIAN_MAX_DECOMPRESSED_BYTES: {
    schema: positiveInt,
    default: '20000000000',
    doc: 'Most bytes one metrics upload may amount to after gzip decompression (a plain upload: its size); past it the worker stops reading, the task fails and nothing is stored.',
  },
  MERIDIAN_MAX_EXPANSION_RATIO: {
    schema: z.coerce.number().min(1),
    default: '200',
    doc: 'Most decompressed bytes per compressed byte of a gzip upload, applied once it has expanded past 16 MiB (small inputs have too few bytes for a meaningful ratio); past it the task fails as a decompression bomb.',
  },
  MERIDIAN_MAX_LINE_BYTES: {
    schema: z.coerce.number().int().min(1024),
    default: '65536',
    doc: 'Longest line (in characters) of a CSV or NDJSON upload, and of the header of a file defined with enforce_schema: a longer upload row is an invalid row, a longer header fails the definition.',
  },
  MERIDIAN_MAX_COLUMNS: {
    schema: z.coerce.number().int().min(4),
    default: '64',
    doc: 'Most columns of a CSV upload row and of the header of a CSV file defined with enforce_schema: a wider upload row is an invalid row, a wider header fails the definition.',
  },
  MERIDIAN_MAX_JSON_DOCUMENT_BYTES: {
    schema: z.coerce.number().int().min(1024),
    default: '67108864',
    doc: 'Largest metrics upload in a whole-document JSON layout (json-body, json-array), in characters after decompression: such a document is parsed whole, so a larger one fails before it is held (send large sets as CSV or NDJSON, which stream).',
  },
  MERIDIAN_UPLOAD_TIME_BUDGET_MS: {
    schema: positiveInt,
    default: '3600000',
    doc: 'Longest the ingest worker spends on one metrics upload; past it the upload is abandoned (nothing of it becomes visible) and its task fails.',
  },
  MERIDIAN_UPLOAD_ATTEMPTS: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '5',
    doc: "Attempts at an upload or a file definition that stops on an error other than Kafka's or its own rows (storage or network trouble, say), with backoff, before its task fails.",
  },
  MERIDIAN_MAX_COMMAND_STARTS: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '3',
    doc: 'Times a worker may start a command (an upload, a file definition) that then stops without an outcome because the process died; at the next start its task fails ("processing stopped N times"), the command goes to the dead-letter topic and its partition moves on.',
  },
  MERIDIAN_UPLOAD_GROUP_MAX: {
    schema: z.coerce.number().int().min(1).max(64),
    default: '8',
    doc: 'Most small uploads (JSON bodies of up to 1 MiB) waiting side by side in a tasks partition that the ingest worker runs in one transaction, each still all or nothing; 1 runs every upload in a transaction of its own.',
  },
  MERIDIAN_POINT_BATCH_SIZE: {
    schema: z.coerce.number().int().min(100).max(500_000),
    default: '50000',
    doc: 'Most points of a point-batch event written to the points topic: a batch is cut sooner when its names and points could encode past MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION.',
  },
  MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION: {
    schema: z.coerce
      .number()
      .int()
      .min(65_536)
      .max(64 * 1024 * 1024),
    default: '921600',
    doc: "Most bytes of encoded point batches per points partition in one produce request of an upload: batches are sent grouped up to it, one request in flight. Keep it under the broker's message.max.bytes (1 MiB by default), which refuses a larger record batch; the default leaves a margin. Point batches are cut to fit it, counting each name's bytes and 18–24 bytes a point before compression, so a push of thousands of long-labelled series is several batches, not one the broker refuses.",
  },
  MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST: {
    schema: z.coerce
      .number()
      .int()
      .min(65_536)
      .max(64 * 1024 * 1024),
    default: '8388608',
    doc: "Most bytes of encoded point batches in one produce request of an upload, all points partitions together: what one upload holds in memory for its next request, and under the broker's socket.request.max.bytes (100 MiB by default) with many partitions. At least MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION.",
  },
  MERIDIAN_PROJECTOR_BATCH_ROWS: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '500000',
    doc: 'Most rows the projector writes to ClickHouse in one INSERT (one atomic block; at most 1000000). A single point batch larger than this is written alone.',
  },
  MERIDIAN_PROJECTOR_FETCH_WAIT_MS: {
    schema: z.coerce.number().int().min(0).max(5_000),
    default: '0',
    doc: 'How long a fetch of the points projector waits for more records (up to 1 MiB of them) before it answers, so that the pushes of that time go to ClickHouse in one insert: each insert writes a part to points and to each of its views (the catalog and the 1 m and 1 h rollups), at a cost in ClickHouse that hardly depends on its rows at push sizes, and each part is merged again later. Points become readable up to this much later at low traffic; a projector behind the log is not slowed (its fetches are full at once); an idle projector fetches once per wait. 0 (the default): a fetch answers as soon as any record is there (waiting at most 500 ms when there is none), an insert per fetch. Measured beside 0 on a shared machine only (docs/benchmarks.md): a small gain in ClickHouse at load 4–7, none above.',
  },
  MERIDIAN_UPLOAD_STAGING: {
    schema: z.enum(['auto', 'on', 'off']),
    default: 'auto',
    doc: 'Staged uploads. on: an upload too large for one decider buffer writes its rows aside into ClickHouse stage tables while it is parsed, and the projector attaches them at its seals (a stage is only a cache: one missing or incomplete is refilled from the log). auto: the same while every points projector advertises in its consumer group that it reads staged uploads (a projector of an older release, during a rolling upgrade or after a rollback, would dead-letter a staged batch), and never with a replicated points table (CLICKHOUSE_CLUSTER). off: every upload is projected after its commit. on is refused with CLICKHOUSE_CLUSTER: an ATTACH into a replicated table reaches the other replicas outside the insert quorum.',
  },
  MERIDIAN_STAGE_TTL_MS: {
    schema: positiveInt,
    default: '7200000',
    doc: "Stage tables of staged uploads made at least this long ago are dropped by the projector's sweeper (a crashed upload's; one still needed is refilled from the log at its seal). At least MERIDIAN_UPLOAD_TIME_BUDGET_MS, so a stage an upload is still writing is kept.",
  },
  MERIDIAN_STAGE_SWEEP_INTERVAL_MS: {
    schema: positiveInt,
    default: '300000',
    doc: 'How often the projector looks for stage tables older than MERIDIAN_STAGE_TTL_MS.',
  },
  MERIDIAN_STAGE_MIN_BYTES: {
    schema: positiveInt,
    default: '16777216',
    doc: 'Uploads smaller than this many bytes (as received; a gzip upload counts compressed) are never staged: projecting a small upload after its commit costs less than its stage tables.',
  },
  MERIDIAN_STAGE_FINISH_TIMEOUT_MS: {
    schema: positiveInt,
    default: '30000',
    doc: 'Longest a staged upload waits for the inserts into its stage tables, twice: while it is parsed, for room when they fall behind (over all its waits), and before its commit, for its last ones (and, on a failed upload, before dropping them). Past it the inserts are given up and those stages count as broken: the projector refills them from the log at the seal, so a ClickHouse that does not answer delays the seal, and the upload by at most twice this.',
  },
  MERIDIAN_STAGE_INSERT_WAIT_MS: {
    schema: positiveInt,
    default: '30000',
    doc: "Longest the projector waits, at a staged upload's seal, for inserts into that upload's stage still running on ClickHouse (ones its writer gave up). Past it they are killed (KILL QUERY) and the stage is refilled from the log, so a hung insert into a stage, which is only a cache, holds that partition's projection at most this long.",
  },
} as const;
