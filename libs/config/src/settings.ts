import { z } from 'zod';

/**
 * Every setting Meridian reads, with its environment variable, default and meaning.
 * This table is the single source: the settings table of the docs (docs/operating/settings.md) is generated from it
 * (`npm run settings-table`), and `loadSettings` validates the environment against it.
 */
const port = z.coerce.number().int().min(1).max(65535);
const positiveInt = z.coerce.number().int().positive();
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const settingDefinitions = {
  MERIDIAN_API_HOST: { schema: z.string().min(1), default: '127.0.0.1', doc: 'Address the api listens on.' },
  MERIDIAN_API_PORT: { schema: port, default: '8088', doc: 'Port the api listens on.' },
  LOG_LEVEL: {
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    default: 'info',
    doc: 'pino log level.',
  },
  KAFKA_BROKERS: {
    schema: z.string().regex(/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/, 'comma-separated host:port list'),
    default: '127.0.0.1:19092',
    doc: 'Kafka bootstrap brokers, comma-separated host:port.',
  },
  KAFKA_CLIENT_ID: { schema: z.string().min(1), default: 'meridian', doc: 'Kafka client id prefix.' },
  MERIDIAN_TOPIC_PREFIX: {
    schema: z.string().regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, . _ -'),
    default: 'meridian.',
    doc: 'Prefix of every Kafka topic and consumer group (isolates environments and test runs).',
  },
  KAFKA_POINTS_PARTITIONS: { schema: positiveInt, default: '3', doc: 'Partitions of the points topic when it is created.' },
  KAFKA_SESSION_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(6000),
    default: '10000',
    doc: 'Consumer group session timeout: how long a crashed worker holds its partitions.',
  },
  CLICKHOUSE_URL: { schema: z.url(), default: 'http://127.0.0.1:18123', doc: 'ClickHouse HTTP endpoint.' },
  CLICKHOUSE_USER: { schema: z.string(), default: 'default', doc: 'ClickHouse user.' },
  CLICKHOUSE_PASSWORD: { schema: z.string(), default: '', doc: 'ClickHouse password (never logged).' },
  CLICKHOUSE_DATABASE: {
    schema: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an identifier'),
    default: 'meridian',
    doc: 'ClickHouse database holding the projections; created at start.',
  },
  S3_ENDPOINT: { schema: z.url(), default: 'http://127.0.0.1:19900', doc: 'S3-compatible endpoint (MinIO).' },
  S3_ACCESS_KEY: { schema: z.string().min(1), default: 'meridian', doc: 'S3 access key.' },
  S3_SECRET_KEY: { schema: z.string().min(1), default: 'meridian-local-secret', doc: 'S3 secret key (never logged).' },
  S3_REGION: { schema: z.string().min(1), default: 'us-east-1', doc: 'S3 region.' },
  S3_BUCKET: {
    schema: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'an S3 bucket name'),
    default: 'meridian',
    doc: 'Bucket for staged uploads and file blobs; created at start.',
  },
  MERIDIAN_STAGING_EXPIRY_DAYS: {
    schema: z.coerce.number().int().min(0).max(3650),
    default: '7',
    doc: 'Days after which staged bytes left behind (an upload refused with 503, a crash) expire in the bucket; 0 keeps them. Applied as a bucket lifecycle rule at start.',
  },
  MERIDIAN_READY_TIMEOUT_MS: {
    schema: positiveInt,
    default: '2000',
    doc: 'How long /readyz waits for each dependency before calling it down.',
  },
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
  MERIDIAN_FILE_QUOTA_BYTES: {
    schema: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    default: '10000000000',
    doc: 'The default quota: bytes of defined files an account may keep (its live files plus definitions in progress) unless an admin set its own (PUT /api/v1/users/{user_name}/file_quota or `meridian quota`); over it a definition gets 413 saying how much is left. GET /api/v1/users shows usage and the quota that applies.',
  },
  MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD: {
    schema: positiveInt,
    default: '100000',
    doc: 'Most values in one JSON upload (413 above it); larger sets go as a file.',
  },
  MERIDIAN_KAFKA_ACK_TIMEOUT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: 'How long the api waits for Kafka to acknowledge a command before answering 503.',
  },
  MERIDIAN_UPLOAD_ATTEMPTS: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '5',
    doc: 'Attempts at an upload or a file definition that stops on an error other than Kafka\'s or its own rows (storage or network trouble, say), with backoff, before its task fails.',
  },
  MERIDIAN_UPLOAD_GROUP_MAX: {
    schema: z.coerce.number().int().min(1).max(64),
    default: '8',
    doc: 'Most small uploads (JSON bodies of up to 1 MiB) waiting side by side in a tasks partition that the ingest worker runs in one transaction, each still all or nothing; 1 runs every upload in a transaction of its own.',
  },
  MERIDIAN_POINT_BATCH_SIZE: {
    schema: z.coerce.number().int().min(100).max(500_000),
    default: '50000',
    doc: 'Points per point-batch event written to the points topic.',
  },
  MERIDIAN_PROJECTOR_BATCH_ROWS: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '500000',
    doc: 'Most rows the projector writes to ClickHouse in one INSERT (one atomic block; at most 1000000). A single point batch larger than this is written alone.',
  },
  MERIDIAN_REQUEST_TIMEOUT_MS: {
    schema: positiveInt,
    default: '30000',
    doc: 'Longest a non-streaming request may take before the api answers 503 /problems/timeout; streaming uploads and downloads are exempt.',
  },
  MERIDIAN_RATE_LIMIT_PER_SECOND: {
    schema: z.coerce.number().min(0).max(1_000_000),
    default: '50',
    doc: 'Requests per second each authenticated user may sustain (token bucket refill rate; 0 turns rate limiting off). Above it: 429 with Retry-After.',
  },
  MERIDIAN_RATE_LIMIT_BURST: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '100',
    doc: 'Requests an authenticated user may send at once before the per-second rate applies (token bucket size).',
  },
  MERIDIAN_MAX_ROWS_CEILING: {
    schema: z.coerce.number().int().min(1).max(1_000_000_000),
    default: '10000000',
    doc: 'Largest max_rows a metrics download accepts (400 above it); larger results are paged with the cursor.',
  },
  MERIDIAN_MAX_ROLLUP_ROWS: {
    schema: z.coerce.number().int().min(100).max(10_000_000),
    default: '100000',
    doc: 'Largest max_rows a metrics download at resolution 1m or 1h accepts (400 above it): such a page (one row per metric and bucket) is read whole into the api before it is written, about 150 bytes a row. A year of one metric is 8,760 rows at 1h, 525,600 at 1m; larger results are paged with the cursor.',
  },
  MERIDIAN_DOWNLOAD_BATCH_ROWS: {
    schema: z.coerce.number().int().min(1024).max(1_048_576),
    default: '65536',
    doc: 'Rows per Arrow record batch and Parquet row group of a format=arrow or format=parquet download (ClickHouse\'s max_block_size for its query): the api holds about one batch per such download, some 40 bytes a row.',
  },
  MERIDIAN_DEV_LOGS: { schema: bool, default: 'false', doc: 'Human-readable logs (make run) instead of JSON lines.' },
  // apiedge (issue 11): body, URL and header sizes, HTTP server timeouts, the JSON upload check off the event loop, the admin listener.
  MERIDIAN_MAX_SMALL_JSON_BODY_BYTES: {
    schema: positiveInt,
    default: '16384',
    doc: 'Largest JSON body of an account or file-metadata request, in bytes (413 as soon as Content-Length or the bytes read pass it); only the JSON upload takes MERIDIAN_MAX_JSON_BODY_BYTES.',
  },
  MERIDIAN_HTTP_HEADERS_TIMEOUT_MS: {
    schema: positiveInt,
    default: '20000',
    doc: 'Longest a client may take to send a request line and headers before the connection is answered 408 and closed.',
  },
  MERIDIAN_HTTP_KEEP_ALIVE_TIMEOUT_MS: {
    schema: positiveInt,
    default: '5000',
    doc: 'How long an idle keep-alive connection is kept open waiting for its next request.',
  },
  MERIDIAN_HTTP_IDLE_TIMEOUT_MS: {
    schema: positiveInt,
    default: '60000',
    doc: 'Longest a connection may stay without a byte in either direction while a request is open, streaming uploads and downloads included; then it is closed.',
  },
  MERIDIAN_HTTP_MIN_BODY_BYTES_PER_SECOND: {
    schema: z.coerce.number().int().min(0),
    default: '16384',
    doc: 'Slowest average rate at which a request body may arrive, counted from the request\'s start once MERIDIAN_HTTP_IDLE_TIMEOUT_MS has passed; a slower body has its connection closed (0 turns it off). Bounds a client trickling an upload just under the idle timeout, without a cap on how long a legitimate large upload may take.',
  },
  MERIDIAN_MAX_URL_BYTES: {
    schema: positiveInt,
    default: '8192',
    doc: 'Longest request target (path and query), in bytes; longer gets 414 problem+json.',
  },
  MERIDIAN_MAX_HEADER_BYTES: {
    schema: z.coerce.number().int().min(1024).max(1_048_576),
    default: '16384',
    doc: 'Largest request line plus headers, in bytes (Node\'s maxHeaderSize); larger gets 431 problem+json and the connection is closed.',
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
  MERIDIAN_ADMIN_HOST: {
    schema: z.string().min(1),
    default: '127.0.0.1',
    doc: 'Address of the admin listener (used only when MERIDIAN_ADMIN_PORT is set).',
  },
  MERIDIAN_ADMIN_PORT: {
    schema: z.literal('').or(port),
    default: '',
    doc: 'Port of the admin listener serving /metrics and the detailed /readyz; when set, the public listener answers /metrics with 404. Unset: no admin listener, /metrics stays on the public port.',
  },
  // Issue 11, bounds: what one upload may make the ingest worker decompress, hold and spend in time.
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
  // issue 11, per-user caps (caps)
  MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: {
    schema: positiveInt,
    default: '8',
    doc: 'Metric uploads (both upload routes, and the telemetry protocols\' routes) whose bodies one api instance receives at once for one user; the next gets 429 /problems/too-many before its body is read.',
  },
  MERIDIAN_MAX_QUEUED_TASKS_PER_USER: {
    schema: positiveInt,
    default: '1000',
    doc: 'Unfinished (queued or running) tasks a user may have; a new upload past it gets 429 /problems/too-many until some finish.',
  },
  MERIDIAN_UPLOAD_BACKLOG_PER_USER: {
    schema: positiveInt,
    default: '8',
    doc: 'Unfinished (queued or running) tasks of one user from which their next upload waits, before its body is read, until one of them ends: what one user can queue in front of the ingest worker, and so the freshness of what they upload (about this many over the uploads ingest finishes per second), stays bounded, and other users\' uploads do not queue behind it. A producer faster than ingest gets slower 202s instead of a queue that grows with the run. At or above MERIDIAN_MAX_QUEUED_TASKS_PER_USER nothing waits: that cap refuses first.',
  },
  MERIDIAN_UPLOAD_BACKLOG_WAIT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: 'Longest an upload waits under MERIDIAN_UPLOAD_BACKLOG_PER_USER (holding one of the user\'s MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER slots); then 429 /problems/too-many with Retry-After.',
  },
  MERIDIAN_MAX_API_KEYS_PER_USER: {
    schema: positiveInt,
    default: '100',
    doc: 'API keys (not revoked) a user may hold; one more gets 409 /problems/limit-reached until a key is revoked.',
  },
  MERIDIAN_MAX_DOWNLOADS_PER_USER: {
    schema: positiveInt,
    default: '4',
    doc: 'Metric downloads and event exports one api instance streams at once for one user (HEAD requests do not count); the next gets 429 /problems/too-many.',
  },
  MERIDIAN_MAX_FILES_PER_USER: {
    schema: positiveInt,
    default: '10000',
    doc: 'Files a user may hold (live files plus definitions in progress); one more gets 409 /problems/limit-reached until a file is deleted. Empty files are refused (400).',
  },
  MERIDIAN_MAX_GRANTS_PER_FILE: {
    schema: positiveInt,
    default: '1000',
    doc: 'Users one file may be shared with; one more gets 409 /problems/limit-reached (grants are recorded for any well-formed name, so this bounds what every process folds for a file).',
  },
  // issue 11, leaks: sealed cursors.
  MERIDIAN_CURSOR_SECRET: {
    schema: z.string().refine((v) => v === '' || v.length >= 32, 'at least 32 characters (or empty: a random secret per process)'),
    default: '',
    doc: 'Secret (at least 32 characters; never logged) from which the key that encrypts and authenticates download and events cursors is derived (HKDF-SHA256, AES-256-GCM). Every api instance behind one address needs the same one. Empty: a random secret per process, with a warning at start; cursors then work only on the instance that issued them, until it restarts.',
  },
  // issue 11, crashloop: the crash-loop breaker and the tasks topic's partitions.
  MERIDIAN_MAX_COMMAND_STARTS: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '3',
    doc: 'Times a worker may start a command (an upload, a file definition) that then stops without an outcome because the process died; at the next start its task fails ("processing stopped N times"), the command goes to the dead-letter topic and its partition moves on.',
  },
  KAFKA_TASKS_PARTITIONS: {
    schema: z.coerce.number().int().min(1).max(1000),
    default: '3',
    doc: 'Partitions of the tasks topic when it is created, and the commands the ingest worker runs at once. An existing topic with fewer partitions is kept as it is (a warning says so): adding partitions would move a task\'s later events away from its earlier ones.',
  },
  // issue 16, POST downloads (posts)
  MERIDIAN_MAX_DOWNLOAD_BODY_BYTES: {
    schema: z.coerce.number().int().min(1024),
    default: '1048576',
    doc: 'Largest body of POST /api/v1/metrics/download (its parameters as a form or JSON), in bytes; 413 as soon as Content-Length or the bytes read pass it.',
  },
  // Sampled series (GET /api/v1/metrics/series, the console's charts): what one request may ask for.
  MERIDIAN_MAX_SERIES_POINTS: {
    schema: z.coerce.number().int().min(10).max(1_000_000),
    default: '10000',
    doc: 'Most points (buckets) per series GET /api/v1/metrics/series answers: a larger points, or a step making more buckets over the range, gets 400. Any range is covered in at most this many by widening the step.',
  },
  MERIDIAN_MAX_SERIES_PER_REQUEST: {
    schema: z.coerce.number().int().min(1).max(1000),
    default: '20',
    doc: 'Most metrics one GET /api/v1/metrics/series charts (a list naming more, or a pattern matching more, gets 400). With MERIDIAN_MAX_SERIES_POINTS it bounds the rows one request reads back.',
  },
  // The Prometheus query API (/prometheus/api/v1, PromQL): what one query may cost.
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
    doc: 'Most steps of a PromQL range query ((end − start) / step); more gets 400 (errorType bad_data) with Prometheus\' own message, whose bound is the same 11,000 by default.',
  },
  MERIDIAN_PROMQL_REDUCE_RATIO: {
    schema: z.coerce.number().min(0).max(1e12),
    default: '4',
    doc: 'When ClickHouse reduces the windows of a PromQL range function (rate, increase, delta, irate, resets, changes, the _over_time functions but quantile_over_time) itself, answering one row per series and step, rather than sending the samples: when the samples in range (estimated from the catalog) are at least this many times those rows. 0 always reduces; a huge value never does. Reducing pays when windows hold many samples (rate over an hour of 15 s samples); with few samples per window, the samples are smaller.',
  },
  MERIDIAN_PROMQL_TIMEOUT_MS: {
    schema: positiveInt,
    default: '20000',
    doc: 'Longest one PromQL query may run, its ClickHouse reads (stopped with KILL QUERY) and its evaluation included; past it: 503 (errorType timeout). Keep it below MERIDIAN_REQUEST_TIMEOUT_MS so the answer is Prometheus\' error, not the api\'s. A smaller `timeout` parameter of the request wins.',
  },
  MERIDIAN_MAX_DOWNLOAD_NAMES: {
    schema: positiveInt,
    default: '10000',
    doc: 'Most metric names one list download may name (GET or POST); more gets 400. Bounds the catalog lookup and the names sent to ClickHouse with one query.',
  },
  // issue 16, the user CLI (cli): bounds of `meridian upload|download|tasks|files`, read by the CLI only.
  MERIDIAN_CLI_UPLOADS_AT_ONCE: {
    schema: z.coerce.number().int().min(1).max(64),
    default: '4',
    doc: 'Files `meridian upload` sends at once; below the api\'s MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER (default 8), so one user\'s CLI leaves room for their other clients.',
  },
  MERIDIAN_CLI_DOWNLOAD_PAGE_ROWS: {
    schema: positiveInt,
    default: '1000000',
    doc: 'Rows per page (max_rows) `meridian download` asks for; each page ends with a resume point, so it bounds what an interrupted download fetches again (--page-rows overrides it).',
  },
  MERIDIAN_CLI_RETRIES: {
    schema: z.coerce.number().int().min(0).max(100),
    default: '20',
    doc: 'Times the CLI repeats a request answered 429 or 503 (after its Retry-After) or cut by a network error before it gives up with the api\'s answer.',
  },
  MERIDIAN_CLI_POLL_MS: {
    schema: z.coerce.number().int().min(50),
    default: '500',
    doc: 'How often `meridian tasks --watch` refreshes its list.',
  },
  // issue 16, the console and its catalog route (console)
  MERIDIAN_MAX_CATALOG_PAGE: {
    schema: positiveInt,
    default: '1000',
    doc: 'Most metrics one page of GET /api/v1/metrics (the catalog) may list (its limit); more gets 400. Bounds the body of one answer; next_after pages through the rest.',
  },
  // issue 17, Kafka for a distributed deployment (helm): the replication of every topic.
  KAFKA_REPLICATION_FACTOR: {
    schema: z.coerce.number().int().min(1).max(32767),
    default: '1',
    doc: 'Replicas of every partition of every topic Meridian creates (3 on a cluster of 3 or more brokers; no more than the brokers there are). An existing topic with another replication factor is kept as it is, with a warning at start: changing it is a partition reassignment, an operator\'s job.',
  },
  KAFKA_MIN_INSYNC_REPLICAS: {
    schema: z.coerce.number().int().min(1).max(32767),
    default: '1',
    doc: 'min.insync.replicas of every topic Meridian creates: the replicas that must hold a write before it is acknowledged (every producer sends with acks=all); at most KAFKA_REPLICATION_FACTOR, checked at start. With 3 replicas, 2 lets one broker die without losing an acknowledged event or refusing writes. An existing topic with another value is kept, with a warning.',
  },
  // issue 13 items 4-5, JSON staging and the task long-poll (jsonstage)
  MERIDIAN_TASK_MAX_WAIT_SECONDS: {
    schema: z.coerce.number().int().min(0).max(3600),
    default: '30',
    doc: 'Longest GET /api/v1/tasks/{task_id}?wait=N holds its answer waiting for the task to end; a larger wait is shortened to it (0 turns waiting off). The request timeout and the connection\'s idle timeout are extended by the wait.',
  },
  MERIDIAN_MAX_TASK_WAITERS_PER_USER: {
    schema: positiveInt,
    default: '16',
    doc: 'Task long-polls (GET /api/v1/tasks/{task_id}?wait=N) one api instance holds at once for one user; the next gets 429 /problems/too-many.',
  },
  // issue 13, snapshots of the folds kept in memory (snap)
  MERIDIAN_SNAPSHOT_EVERY_EVENTS: {
    schema: z.coerce.number().int().min(0),
    default: '10000',
    doc: 'A process that writes snapshots of a folded log (the accounts log, by the api and the ingest worker) writes one once the log has moved this many offsets past the newest snapshot it has seen. Bounds what a new process reads at start to the snapshot plus about this many events; 0 writes none (starts still use those there are).',
  },
  MERIDIAN_SNAPSHOT_MIN_INTERVAL_MS: {
    schema: z.coerce.number().int().min(0),
    default: '60000',
    doc: 'Least time between two snapshots of one log written by one process: bounds the storage writes and the pause (serializing the state) a busy log costs.',
  },
  MERIDIAN_SNAPSHOT_KEEP: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '3',
    doc: 'Snapshots kept per log (the newest); older ones are removed after each write. A start skips a snapshot it cannot read and takes the next older one, or the log from offset 0.',
  },
  // issue 13, the tasks read model (tasksrm): tasks served from ClickHouse, memory bounded by what is unfinished.
  MERIDIAN_TASK_RETENTION_DAYS: {
    schema: z.coerce.number().positive(),
    default: '30',
    doc: 'Days a finished task stays in the tasks read model after its last change; the ingest process then removes it (GET /api/v1/tasks/{id} answers 404). The log keeps every task (meridian replay rebuild tasks --swap-if-verified restores them). An Idempotency-Key is honoured for as long as its task is kept.',
  },
  MERIDIAN_TASK_RETENTION_INTERVAL_MS: {
    schema: z.coerce.number().int().min(100),
    default: '3600000',
    doc: 'How often the ingest process removes tasks past MERIDIAN_TASK_RETENTION_DAYS from the read model (when any is due: one ALTER TABLE ... DELETE per read-model table, background mutations in ClickHouse).',
  },
  MERIDIAN_TASK_RELEASE_INTERVAL_MS: {
    schema: z.coerce.number().int().min(50),
    default: '1000',
    doc: 'How often api and ingest processes read the tasks read model\'s positions to let go of finished tasks it covers: how long a finished task stays in their memory after the read model has it.',
  },
  // the ingest worker's probe listener (issue 17 item 5 follow-up) and the CLI's task long-polls (opsmall)
  MERIDIAN_INGEST_HEALTH_HOST: {
    schema: z.string().min(1),
    default: '127.0.0.1',
    doc: 'Address of the ingest worker\'s probe listener (/healthz, /readyz; used only when MERIDIAN_INGEST_HEALTH_PORT is set). In a pod: 0.0.0.0, so the kubelet reaches it.',
  },
  MERIDIAN_INGEST_HEALTH_PORT: {
    schema: z.literal('').or(port),
    default: '',
    doc: 'Port of the ingest worker\'s probe listener: /healthz (no consumer failed for good) and /readyz (Kafka, ClickHouse, MinIO answer and its consumers (commands, points projector, tasks projector, files projector) joined their groups). Unset: no listener (several workers on one machine need no ports); a consumer that fails for good ends the process either way.',
  },
  MERIDIAN_CLI_TASK_WAIT_SECONDS: {
    schema: z.coerce.number().int().min(1).max(3600),
    default: '1',
    doc: 'Longest one task request of the CLI waits for the task to end (GET /api/v1/tasks/{task_id}?wait=N, shortened to the api\'s MERIDIAN_TASK_MAX_WAIT_SECONDS): the end is seen at once, and the progress line shows the task\'s rows at least this often while it runs (one request a second by default, where polling took two).',
  },
  // issue 17 items 1-2, ClickHouse replicas (cluster)
  CLICKHOUSE_CLUSTER: {
    schema: z.union([z.literal(''), z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an identifier')]),
    default: '',
    doc: 'Name of the ClickHouse cluster (remote_servers) whose replicas hold the tables; empty: one server. When set, migrations create Replicated*MergeTree tables under CLICKHOUSE_REPLICA_PATH, run on every server of CLICKHOUSE_URLS, and the replay swap refuses to run.',
  },
  CLICKHOUSE_REPLICA_PATH: {
    schema: z.string().regex(/^\/[A-Za-z0-9_{}./-]*[^/]$/, 'a ZooKeeper path such as /clickhouse/tables/{shard}'),
    default: '/clickhouse/tables/{shard}',
    doc: 'ZooKeeper path under which each replicated table keeps its replicas\' state, as `<path>/<database>/<table>`; `{shard}` and the replica name `{replica}` come from each server\'s macros. Only with CLICKHOUSE_CLUSTER.',
  },
  CLICKHOUSE_URLS: {
    schema: z.union([z.literal(''), z.string().regex(/^https?:\/\/[^,\s]+(,https?:\/\/[^,\s]+)*$/, 'comma-separated http(s) URLs')]),
    default: '',
    doc: 'Every ClickHouse server of the cluster, comma-separated (empty: CLICKHOUSE_URL alone). Migrations run on each (CREATE TABLE of a replicated table is per server); downloads and the catalog go to CLICKHOUSE_URL and, when it cannot be reached, to the next of these that can; /readyz says ClickHouse is up while any answers. Inserts go to CLICKHOUSE_URL only.',
  },
  CLICKHOUSE_INSERT_QUORUM: {
    schema: z.coerce.number().int().min(0).max(16),
    default: '0',
    doc: 'Replicas that must hold each projector insert before it is acknowledged (insert_quorum; 0: off, one server). Set it to the replica count: an acknowledged block is then on every replica, and the projector reads its positions with select_sequential_consistency, so it never resumes past a block a replica lacks. While a replica is down, inserts wait (ingest stalls, reads go on).',
  },
  CLICKHOUSE_INSERT_QUORUM_TIMEOUT_MS: {
    schema: positiveInt,
    default: '600000',
    doc: 'How long one quorum insert waits for the other replicas (insert_quorum_timeout); past it the outcome is unknown and the projector settles and resumes from the positions, as after any failed insert.',
  },
  // issue 13, the files read model
  MERIDIAN_FILES_READ_MODEL_WAIT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: 'Longest an api request waits for the files read model to reach the files log\'s end (a file command deciding, a lookup of an id not shown yet, a list or usage right after a definition succeeded) or a command\'s own event. Past it a file command gets 503 (it decides on nothing older); a lookup, list or quota check answers with what the read model holds. The ingest worker\'s blob collector waits as long for the read model to reach the log\'s end before it removes anything, and past it tries again later.',
  },
  MERIDIAN_READ_MODEL_MARKER_FLUSH_MS: {
    schema: positiveInt,
    default: '100',
    doc: 'How long the tasks and files projectors gather positions past transaction markers (every committed transaction ends in a fetch of markers only) before writing them as one row per partition: fewer tiny parts in ClickHouse, at the cost of this much delay before the positions reach the log\'s end.',
  },
  // issue 13 review fixes (s-fix-rm): a bound on every tasks/files read-model query
  MERIDIAN_READ_MODEL_QUERY_TIMEOUT_MS: {
    schema: positiveInt,
    default: '5000',
    doc: 'Longest one query of the tasks or files read model (a lookup, a list, usage, positions) may take in ClickHouse; past it the query is abandoned and counts as ClickHouse unavailable: the api answers 503 (retry later), a projector retries.',
  },
  MERIDIAN_PUSH_MAX_BYTES: {
    schema: z.coerce.number().int().min(0).max(16 * 1024 * 1024),
    default: '1048576',
    doc: 'Largest JSON upload body that takes the push path: decided in the api (an invalid one is answered 400 with its rows at once) and written to the log with its task in one transaction shared with the pushes arriving beside it, with no staging and no ingest worker run. Larger bodies, and files, are staged for the ingest worker. 0: every upload is staged.',
  },
  MERIDIAN_PUSH_MAX_LAG_POINTS: {
    schema: positiveInt,
    default: '10000000',
    doc: 'Points accepted (by every user, pushes and staged uploads) and not yet stored in ClickHouse past which a push gets 429 /problems/too-many with Retry-After: when ClickHouse or the projector falls behind, producers slow down instead of the backlog growing without end.',
  },
  MERIDIAN_PROTOCOL_MAX_BYTES: {
    schema: z.coerce.number().int().min(65_536).max(64 * 1024 * 1024),
    default: '8388608',
    doc: 'Bytes of one telemetry protocol request (remote write, OTLP, line protocol) once decompressed: a snappy body declaring more is refused before anything is allocated, a gzip body is cut at it; 413. The body as sent is bounded by MERIDIAN_PUSH_MAX_BYTES.',
  },
  MERIDIAN_PROTOCOL_MAX_SERIES: {
    schema: z.coerce.number().int().min(1).max(1_000_000),
    default: '10000',
    doc: 'Distinct series one telemetry protocol request may write; more is a 413 for the whole request (Prometheus sends at most a few thousand a request by default).',
  },
  MERIDIAN_PROTOCOL_MAX_SAMPLES: {
    schema: z.coerce.number().int().min(1).max(10_000_000),
    default: '100000',
    doc: 'Samples one telemetry protocol request may hold, stored or refused; more is a 413 for the whole request.',
  },
  MERIDIAN_PUSH_WRITERS: {
    schema: z.coerce.number().int().min(1).max(16),
    default: '2',
    doc: 'Transactional writers of pushes in one api instance, each with one transaction under way at a time: the pushes that arrive while every writer is busy go together in the next transaction that starts. Two keep one transaction filling while the last one\'s commit completes on the broker.',
  },
  MERIDIAN_API_INSTANCE: {
    schema: z.string().regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, . _ -'),
    default: '',
    doc: 'This api instance\'s name, unique among the live instances and kept across its restarts (a StatefulSet pod\'s name, a service unit\'s): its push writer\'s Kafka transactional id derives from it, so a restarted instance ends at once a transaction its predecessor left open. Empty: the host name and a random suffix, and a dead instance\'s open transaction ends at MERIDIAN_PUSH_TRANSACTION_TIMEOUT_MS. Two live instances must never share a name: they would fence each other\'s pushes.',
  },
  MERIDIAN_PUSH_TRANSACTION_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(1000).max(900_000),
    default: '10000',
    doc: 'How long Kafka lets a transaction of pushes stay open before it aborts it: an api instance that dies mid-transaction and is not restarted under the same MERIDIAN_API_INSTANCE holds back the readers of the partitions it wrote (the projector reads committed data only) at most this long.',
  },
  // issue 15: an upload's point batches sent grouped
  MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION: {
    schema: z.coerce.number().int().min(65_536).max(64 * 1024 * 1024),
    default: '921600',
    doc: 'Most bytes of encoded point batches per points partition in one produce request of an upload: batches are sent grouped up to it, one request in flight. Keep it under the broker\'s message.max.bytes (1 MiB by default), which refuses a larger record batch; the default leaves a margin. One point batch must fit in it (MERIDIAN_POINT_BATCH_SIZE × 18 bytes + 4 KiB, checked at start).',
  },
  MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST: {
    schema: z.coerce.number().int().min(65_536).max(64 * 1024 * 1024),
    default: '8388608',
    doc: 'Most bytes of encoded point batches in one produce request of an upload, all points partitions together: what one upload holds in memory for its next request, and under the broker\'s socket.request.max.bytes (100 MiB by default) with many partitions. At least MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION.',
  },
  // issue 13, the rest (s-i13-rest): the blob collector asks the files read model
  MERIDIAN_BLOB_SWEEP_INTERVAL_MS: {
    schema: positiveInt,
    default: '5000',
    doc: 'How often the ingest worker\'s blob collector looks in the files read model for deletions past its sweep position (blobs of definitions that failed after promoting are checked at once), and how long it waits before retrying a collection that failed. A deleted file\'s bytes leave storage within about this long once the read model shows the deletion and no other file has the same content.',
  },
  // issue 15: staged uploads
  MERIDIAN_UPLOAD_STAGING: {
    schema: z.enum(['auto', 'on', 'off']),
    default: 'auto',
    doc: 'Staged uploads. on: an upload too large for one decider buffer writes its rows aside into ClickHouse stage tables while it is parsed, and the projector attaches them at its seals (a stage is only a cache: one missing or incomplete is refilled from the log). auto: the same while every points projector advertises in its consumer group that it reads staged uploads (a projector of an older release, during a rolling upgrade or after a rollback, would dead-letter a staged batch), and never with a replicated points table (CLICKHOUSE_CLUSTER). off: every upload is projected after its commit. on is refused with CLICKHOUSE_CLUSTER: an ATTACH into a replicated table reaches the other replicas outside the insert quorum.',
  },
  MERIDIAN_STAGE_TTL_MS: {
    schema: positiveInt,
    default: '7200000',
    doc: 'Stage tables of staged uploads made at least this long ago are dropped by the projector\'s sweeper (a crashed upload\'s; one still needed is refilled from the log at its seal). At least MERIDIAN_UPLOAD_TIME_BUDGET_MS, so a stage an upload is still writing is kept.',
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
  // issue 15: staged uploads under faults
  MERIDIAN_STAGE_FINISH_TIMEOUT_MS: {
    schema: positiveInt,
    default: '30000',
    doc: 'Longest a staged upload waits for the inserts into its stage tables, twice: while it is parsed, for room when they fall behind (over all its waits), and before its commit, for its last ones (and, on a failed upload, before dropping them). Past it the inserts are given up and those stages count as broken: the projector refills them from the log at the seal, so a ClickHouse that does not answer delays the seal, and the upload by at most twice this.',
  },
  // issue 15: staged uploads, bounded waits
  MERIDIAN_STAGE_INSERT_WAIT_MS: {
    schema: positiveInt,
    default: '30000',
    doc: 'Longest the projector waits, at a staged upload\'s seal, for inserts into that upload\'s stage still running on ClickHouse (ones its writer gave up). Past it they are killed (KILL QUERY) and the stage is refilled from the log, so a hung insert into a stage, which is only a cache, holds that partition\'s projection at most this long.',
  },
  // blob collection across ingest workers
  MERIDIAN_BLOB_REMOVAL_LEASE_MS: {
    schema: positiveInt,
    default: '600000',
    doc: 'How long a blob collection owns the bytes it keeps aside while it checks a removal, each copy counted from when it is made (however long the copy took): it starts no removal once its first copy is a quarter of this old, leaves for a later collection (without failing this one) any blob whose copy MinIO already dates older than a quarter of this, puts back each copy its check ends past half of this, and another worker\'s collection takes over kept bytes (puts them back, decides again) only once they are older than this whole lease. So a worker pause, or a clock difference between workers and MinIO, of about a quarter of this can let a takeover run beside a removal: keep a quarter of it well above both. At least 4 × MERIDIAN_FILES_READ_MODEL_WAIT_MS.',
  },
  MERIDIAN_BLOB_CLAIM_TTL_MS: {
    schema: positiveInt,
    default: '7200000',
    doc: 'Age past which a file definition\'s claim on its blob counts as a dead definition\'s, and a blob collection deletes it (claims of finished tasks are deleted sooner); a definition whose look at its blob ended past half of this claims and looks again, and one about to commit past half of this after its claim aborts that commit and runs again (a retry within MERIDIAN_UPLOAD_ATTEMPTS). At least MERIDIAN_UPLOAD_TIME_BUDGET_MS.',
  },
  // issue 15: the api receiving files (parts staged in the bucket)
  MERIDIAN_STORAGE_PART_BYTES: {
    schema: z.coerce.number().int().min(5 * 1024 * 1024).max(5 * 1024 ** 3),
    default: '8388608',
    doc: 'Size of each part of a multipart upload when the api streams a file (a metrics file or a defined file) into the bucket; S3 allows 5 MiB to 5 GiB and 10,000 parts, so MERIDIAN_MAX_UPLOAD_BYTES must fit in 10,000 of them. The api holds (MERIDIAN_STORAGE_PARTS_IN_FLIGHT + 1) parts per upload it is receiving.',
  },
  MERIDIAN_STORAGE_PARTS_IN_FLIGHT: {
    schema: z.coerce.number().int().min(1).max(64),
    default: '3',
    doc: 'Most parts of one file the api uploads to the bucket at once while it reads the next: reading the request and MinIO\'s storing overlap. Past it the api stops reading the request until a part is stored (backpressure on the client).',
  },
} as const;

export type SettingName = keyof typeof settingDefinitions;

/**
 * Rules that tie settings together, checked once each has parsed on its own (zod refinements
 * over the parsed values); a broken rule is reported at start like an invalid value.
 */
export const settingRules = z
  .object({ KAFKA_REPLICATION_FACTOR: z.number(), KAFKA_MIN_INSYNC_REPLICAS: z.number(), MERIDIAN_POINT_BATCH_SIZE: z.number(), MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION: z.number(), MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST: z.number(), MERIDIAN_UPLOAD_STAGING: z.string(), CLICKHOUSE_CLUSTER: z.string(), MERIDIAN_STAGE_TTL_MS: z.number(), MERIDIAN_UPLOAD_TIME_BUDGET_MS: z.number(), MERIDIAN_FILES_READ_MODEL_WAIT_MS: z.number(), MERIDIAN_BLOB_REMOVAL_LEASE_MS: z.number(), MERIDIAN_BLOB_CLAIM_TTL_MS: z.number(), MERIDIAN_MAX_UPLOAD_BYTES: z.number(), MERIDIAN_STORAGE_PART_BYTES: z.number() })
  .refine((s) => s.KAFKA_MIN_INSYNC_REPLICAS <= s.KAFKA_REPLICATION_FACTOR, {
    path: ['KAFKA_MIN_INSYNC_REPLICAS'],
    message: 'at most KAFKA_REPLICATION_FACTOR: a topic with fewer replicas than min.insync.replicas refuses every acknowledged write',
  })
  .refine((s) => maxPointBatchBytes(s.MERIDIAN_POINT_BATCH_SIZE) <= s.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION, {
    path: ['MERIDIAN_POINT_BATCH_SIZE'],
    message: 'a point batch of this many points may encode to more than MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION (18 bytes a point + 4 KiB): lower it, or raise that bound together with the broker\'s message.max.bytes, which refuses a larger record',
  })
  .refine((s) => s.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION <= s.MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST, {
    path: ['MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION'],
    message: 'at most MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST: a request holds at least one partition\'s share',
  })
  .refine((s) => s.MERIDIAN_UPLOAD_STAGING !== 'on' || s.CLICKHOUSE_CLUSTER === '', {
    path: ['MERIDIAN_UPLOAD_STAGING'],
    message: 'not on when CLICKHOUSE_CLUSTER is set (auto stages nothing then): an ATTACH into a replicated points table reaches the other replicas outside the insert quorum',
  })
  .refine((s) => s.MERIDIAN_STAGE_TTL_MS >= s.MERIDIAN_UPLOAD_TIME_BUDGET_MS, {
    path: ['MERIDIAN_STAGE_TTL_MS'],
    message: 'at least MERIDIAN_UPLOAD_TIME_BUDGET_MS: the sweeper would drop the stages of an upload still running',
  })
  .refine((s) => s.MERIDIAN_BLOB_REMOVAL_LEASE_MS >= 4 * s.MERIDIAN_FILES_READ_MODEL_WAIT_MS, {
    path: ['MERIDIAN_BLOB_REMOVAL_LEASE_MS'],
    message: 'at least 4 × MERIDIAN_FILES_READ_MODEL_WAIT_MS: a collection\'s check after its removals waits that long for the read model, within a quarter of the lease',
  })
  .refine((s) => s.MERIDIAN_BLOB_CLAIM_TTL_MS >= s.MERIDIAN_UPLOAD_TIME_BUDGET_MS, {
    path: ['MERIDIAN_BLOB_CLAIM_TTL_MS'],
    message: 'at least MERIDIAN_UPLOAD_TIME_BUDGET_MS: a claim younger than the time a definition may take is never taken for a dead one\'s',
  })
  .refine((s) => s.MERIDIAN_MAX_UPLOAD_BYTES <= 10_000 * s.MERIDIAN_STORAGE_PART_BYTES, {
    path: ['MERIDIAN_STORAGE_PART_BYTES'],
    message: 'at least MERIDIAN_MAX_UPLOAD_BYTES / 10,000: a multipart upload has at most 10,000 parts',
  });

/**
 * The most bytes one point batch of `points` points takes in the points topic: per point a
 * timestamp (an Avro long, at most 10 bytes) and a value (a double, 8); the rest (the metric
 * name in the key and the value, at most 256 characters of up to 4 UTF-8 bytes each; the task
 * id; the record's framing) stays under 4 KiB.
 */
function maxPointBatchBytes(points: number): number {
  return points * 18 + 4096;
}
