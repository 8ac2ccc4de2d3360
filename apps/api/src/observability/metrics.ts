import type { Context, Next } from 'koa';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TaskStatus, TasksState } from '@meridian/domain';
import { unhandledRejections } from '@meridian/observability';

const TASK_STATUSES: readonly TaskStatus[] = ['queued', 'running', 'succeeded', 'failed'];

/** Requests that matched no route share one label value, so a scan of random paths cannot blow up the series. */
export const UNMATCHED_ROUTE = '(unmatched)';

export type UploadSource = 'json_body' | 'file';

/**
 * The api's Prometheus metrics, in a registry of its own (several apis in one test process
 * never share counters). Served by GET /metrics.
 */
export type ApiMetrics = {
  readonly registry: Registry;
  /** Koa middleware: counts every request and times it until its response has been sent. */
  readonly observeRequests: (ctx: Context, next: Next) => Promise<void>;
  /** Called on each 202 of an upload route. `points` is known for JSON uploads only (files are parsed by ingest). */
  uploadAccepted(source: UploadSource, bytes: number, points?: number): void;
  /** Called on each committed transaction of pushes, with how many pushes it held. */
  pushesCommitted(pushes: number): void;
};

export type FinishedTasksTally = { readonly succeeded: number; readonly failed: number; readonly points: number };

export type ApiMetricsOptions = {
  /** The live tasks fold (unfinished tasks): queued and running counts and projection freshness are read from it at each scrape. */
  readonly tasks?: () => TasksState;
  /** Tasks this process saw finish since it started, and the points of the succeeded ones. */
  readonly finishedTasks?: () => FinishedTasksTally;
  /** Node process metrics (CPU, memory, event loop lag, GC); on by default. */
  readonly processMetrics?: boolean;
  /** The ingest consumer groups' lag per partition, read from Kafka at each scrape. */
  readonly consumerLag?: () => Promise<ReadonlyArray<{ group: string; topic: string; partition: number; lag: number }>>;
  /** The points archive's lag per partition (offsets not archived yet, the age of the oldest of them), read at each scrape. */
  readonly archiveLag?: () => Promise<ReadonlyArray<{ topic: string; partition: number; offsets: number; oldestUnarchivedAgeMs: number }>>;
  /** The folded logs (accounts, tasks, files): events each read at start after its snapshot (tasks: after the read model's positions), once caught up. */
  readonly folds?: () => ReadonlyArray<{ readonly fold: string; readonly eventsReadAtStart: number | null }>;
  /** Points of uploads in the log and not yet projected (what MERIDIAN_PUSH_MAX_LAG_POINTS bounds), read at each scrape. */
  readonly awaitingProjection?: () => number;
  /** Bytes of request bodies reserved under MERIDIAN_BODY_BYTES_IN_FLIGHT, and the requests waiting for room, read at each scrape. */
  readonly bodies?: () => { readonly held: number; readonly waiting: number };
  /** The clock, for ages (tests pass their own). */
  readonly now?: () => number;
};

/** `/api/v1/tasks/:task_id` as the OpenAPI document writes it: `/api/v1/tasks/{task_id}`. */
function routeLabel(ctx: Context): string {
  const matched = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
  return typeof matched === 'string' ? matched.replace(/:(\w+)/g, '{$1}') : UNMATCHED_ROUTE;
}

export function createApiMetrics(options: ApiMetricsOptions = {}): ApiMetrics {
  const registry = new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const observeRequests = requestMetrics(registry);
  const { uploadAccepted, pushesCommitted } = uploadMetrics(registry);
  readAtScrape(registry, options);
  return { registry, observeRequests, uploadAccepted, pushesCommitted };
}

/** Every request counted and timed until its response has been sent, by method, route template and status. */
function requestMetrics(registry: Registry): ApiMetrics['observeRequests'] {
  const requests = new Counter({
    name: 'meridian_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'meridian_http_request_duration_seconds',
    help: "Time from a request's arrival until its response was sent (streams included), by method, route template and status.",
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  return async (ctx, next) => {
    const started = performance.now();
    const record = () => {
      const labels = { method: ctx.method, route: routeLabel(ctx), status: String(ctx.status) };
      requests.inc(labels);
      duration.observe(labels, (performance.now() - started) / 1000);
    };
    // 'close' comes once the response has been sent in full, or the caller went away.
    ctx.res.once('close', record);
    await next();
  };
}

/** Uploads and pushes accepted, counted as the routes and the push log report them. */
function uploadMetrics(registry: Registry): Pick<ApiMetrics, 'uploadAccepted' | 'pushesCommitted'> {
  const uploads = new Counter({
    name: 'meridian_uploads_accepted_total',
    help: 'Uploads accepted (202: the command is durably in the event log), by source.',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  const uploadBytes = new Counter({
    name: 'meridian_upload_bytes_accepted_total',
    help: 'Bytes of accepted uploads, by source.',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  const uploadPoints = new Counter({
    name: 'meridian_upload_points_accepted_total',
    help: 'Values in accepted JSON uploads (file uploads are counted once parsed: see meridian_points_ingested_total).',
    registers: [registry],
  });
  const pushTransactions = new Counter({
    name: 'meridian_push_transactions_total',
    help: 'Transactions of pushes committed: pushes arriving together share one (meridian_pushes_committed_total over this is how many on average).',
    registers: [registry],
  });
  const pushes = new Counter({
    name: 'meridian_pushes_committed_total',
    help: 'Pushes (small JSON uploads decided in the api) committed to the event log.',
    registers: [registry],
  });
  for (const source of ['json_body', 'file'] as const) {
    uploads.inc({ source }, 0);
    uploadBytes.inc({ source }, 0);
  }
  return {
    uploadAccepted(source, bytes, points) {
      uploads.inc({ source });
      uploadBytes.inc({ source }, bytes);
      if (points !== undefined) uploadPoints.inc(points);
    },
    pushesCommitted(n) {
      pushTransactions.inc();
      pushes.inc(n);
    },
  };
}

/** What is read from the process's state at each scrape: unhandled rejections, the tasks fold, the consumers' lag, the folds' starts. */
function readAtScrape(registry: Registry, options: ApiMetricsOptions): void {
  new Counter({
    name: 'meridian_unhandled_rejections_total',
    help: 'Promise rejections nothing handled since the process started: logged, the process went on; each is a bug.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(unhandledRejections());
    },
  });
  const awaitingProjection = options.awaitingProjection;
  if (awaitingProjection) {
    new Gauge({
      name: 'meridian_points_awaiting_projection',
      help: "Points of uploads in the event log and not yet stored in ClickHouse, as this process's tasks fold counts them; pushes get 429 past MERIDIAN_PUSH_MAX_LAG_POINTS.",
      registers: [registry],
      collect() {
        this.set(awaitingProjection());
      },
    });
  }
  const bodies = options.bodies;
  if (bodies) {
    new Gauge({
      name: 'meridian_body_bytes_held',
      help: 'Bytes of JSON upload and push bodies this api instance holds now (reserved before each is read, until it is answered), of MERIDIAN_BODY_BYTES_IN_FLIGHT.',
      registers: [registry],
      collect() {
        this.set(bodies().held);
      },
    });
    new Gauge({
      name: 'meridian_bodies_waiting',
      help: 'JSON uploads and pushes waiting, unread, for room under MERIDIAN_BODY_BYTES_IN_FLIGHT.',
      registers: [registry],
      collect() {
        this.set(bodies().waiting);
      },
    });
  }
  taskMetrics(registry, options);
  const consumerLag = options.consumerLag;
  if (consumerLag) {
    new Gauge({
      name: 'meridian_consumer_lag',
      help: 'Messages the ingest consumer groups have still to process, per partition (end offset minus committed offset).',
      labelNames: ['group', 'topic', 'partition'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const l of await consumerLag()) this.set({ group: l.group, topic: l.topic, partition: String(l.partition) }, l.lag);
      },
    });
  }
  if (options.archiveLag) archiveMetrics(registry, options.archiveLag, options.now ?? Date.now);
  const folds = options.folds;
  if (folds) {
    new Gauge({
      name: 'meridian_fold_start_events_read',
      help: "Events each folded log (accounts, tasks, files) read at this process's start before it caught up: the tail after the snapshot it started from (tasks: after the read model's positions), or the whole log without one.",
      labelNames: ['fold'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const f of folds()) if (f.eventsReadAtStart !== null) this.set({ fold: f.fold }, f.eventsReadAtStart);
      },
    });
  }
}

/** The points archive's lag behind the log, per partition, read at each scrape (both gauges from one read). */
function archiveMetrics(registry: Registry, archiveLag: NonNullable<ApiMetricsOptions['archiveLag']>, clock: () => number): void {
  // A scrape collects both gauges: one read serves every collect within a second (counting the
  // collects instead would pair the wrong ones for good after a registry asked for one gauge alone).
  let shared: { readonly read: ReturnType<typeof archiveLag>; readonly at: number } | null = null;
  const once = () => {
    const now = clock();
    if (shared === null || now - shared.at >= 1000) shared = { read: archiveLag(), at: now };
    return shared.read;
  };
  const labelNames = ['topic', 'partition'] as const;
  new Gauge({
    name: 'meridian_archive_lag_offsets',
    help: "Offsets of the points topic not archived yet, per partition: from the archive's end (as the last archiving pass left it) to the log's last stable offset.",
    labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      for (const l of await once()) this.set({ topic: l.topic, partition: String(l.partition) }, l.offsets);
    },
  });
  new Gauge({
    name: 'meridian_archive_oldest_unarchived_seconds',
    help: 'Age of the oldest record of the points topic not archived yet, per partition (0 when all are); past MERIDIAN_ARCHIVE_RETENTION_MS the brokers keep records longer than the window.',
    labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      for (const l of await once()) this.set({ topic: l.topic, partition: String(l.partition) }, l.oldestUnarchivedAgeMs / 1000);
    },
  });
}

/** Tasks by status, points ingested, and the projection's freshness, from the tasks fold. */
function taskMetrics(registry: Registry, options: ApiMetricsOptions): void {
  const tasks = options.tasks;
  const finishedTasks = options.finishedTasks;
  if (tasks && finishedTasks) {
    new Gauge({
      name: 'meridian_tasks',
      help: 'Background tasks by status: queued and running now; succeeded and failed since this api started, from the tasks log it follows.',
      labelNames: ['status'] as const,
      registers: [registry],
      collect() {
        const counts = new Map<TaskStatus, number>(TASK_STATUSES.map((s) => [s, 0]));
        for (const task of tasks().values())
          if (task.status === 'queued' || task.status === 'running') counts.set(task.status, (counts.get(task.status) ?? 0) + 1);
        const finished = finishedTasks();
        counts.set('succeeded', finished.succeeded);
        counts.set('failed', finished.failed);
        for (const [status, n] of counts) this.set({ status }, n);
      },
    });
    new Counter({
      name: 'meridian_points_ingested_total',
      help: 'Points made queryable by upload tasks that succeeded since this api started, from the tasks log it follows.',
      registers: [registry],
      collect() {
        // The tally only grows while the process lives: the counter is monotonic.
        this.reset();
        this.inc(finishedTasks().points);
      },
    });
  }
  if (tasks) {
    const now = options.now ?? Date.now;
    new Gauge({
      name: 'meridian_projection_pending_seconds',
      help: 'Projection freshness: age of the oldest parsed upload whose points are not all queryable yet (0 when none waits).',
      registers: [registry],
      collect() {
        let oldest: number | null = null;
        for (const task of tasks().values()) {
          if (task.kind === 'metrics_upload' && task.status === 'running' && task.result !== null)
            oldest = Math.min(oldest ?? task.created_at, task.created_at);
        }
        this.set(oldest === null ? 0 : Math.max(0, (now() - oldest) / 1000));
      },
    });
  }
}
