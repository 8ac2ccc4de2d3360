import type Koa from 'koa';
import { fileQuotaOf, type FileEvent, type PointsFact, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents, partitionFor } from '@meridian/kafka';
import { AccountsStore, TasksStore } from '@meridian/platform';
import { planExport, streamExport, type ExportDeps } from '@meridian/replay';
import type { ApiServices } from './api-services.ts';
import { createAdminApp } from './admin-app.ts';
import { createApp } from './app.ts';
import { FileCatalog } from './files/catalog.ts';
import { cursorSealFromSetting } from './http/cursor-seal.ts';
import { PerUserSlots } from './http/per-user-slots.ts';
import { createApiMetrics } from './observability/metrics.ts';
import { jsonCheckPool } from './uploads/json-check-pool.ts';
import { PushLog } from './uploads/push-log.ts';
import type { SubmitDeps } from './uploads/push-submit.ts';
import { compileLimits } from '@meridian/protocols';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { withTimeout } from '@meridian/observability';

export type Api = {
  readonly app: Koa;
  /** The admin listener's app (/metrics, detailed /readyz) when MERIDIAN_ADMIN_PORT is set. */
  readonly adminApp: Koa | null;
  readonly accounts: AccountsStore;
  readonly tasks: TasksStore;
  /** The file catalog: the files read model in ClickHouse (the api holds no file in memory). */
  readonly files: FileCatalog;
  /** Starts following the logs the api serves from; resolves once they have caught up. */
  start(): Promise<void>;
  stop(): Promise<void>;
};

/** A readiness check that a folded log has caught up (the api serves from it). */
function caughtUp(name: string, store: { readonly ready: boolean }) {
  return { name, check: async () => { if (!store.ready) throw new Error(`catching up with the ${name} log`); } };
}

/** Every ingest consumer group's lag per partition; empty when Kafka does not answer in time (a scrape never hangs). */
async function ingestLag(services: ApiServices) {
  const { groups: g, topics: t } = services;
  const groups = [
    { group: g.commands, topic: t.tasks },
    { group: g.projector, topic: t.points },
    { group: g.tasksProjector, topic: t.tasks },
    { group: g.filesProjector, topic: t.files },
  ];
  try {
    return await withTimeout(Promise.all(groups.map(async ({ group, topic }) =>
      (await services.log.groupLag(group, topic)).map(({ partition, lag }) => ({ group, topic, partition, lag })),
    )), 2000, 'kafka').then((lists) => lists.flat());
  } catch {
    return [];
  }
}

/**
 * A push writer retries what Kafka answers "not yet" (a transaction started while the coordinator
 * still completes the writer's last one: CONCURRENT_TRANSACTIONS) after this long, as Kafka's own
 * client does, rather than after the 200 ms the other clients wait: a push's answer waits on it.
 */
const PUSH_FIRST_RETRY_MS = 20;

/**
 * The points and tasks topics' partition counts, read once (a push's records are placed by the
 * producer's own rule, to know their offsets); a failed read is tried again by the next push.
 */
function topicPartitions(services: ApiServices): () => Promise<{ points: number; tasks: number }> {
  let counts: Promise<{ points: number; tasks: number }> | null = null;
  return () => {
    counts ??= Promise.all([services.log.endOffsets(services.topics.points), services.log.endOffsets(services.topics.tasks)])
      .then(([points, tasks]) => ({ points: points.size, tasks: tasks.size }));
    counts.catch(() => { counts = null; });
    return counts;
  };
}

/** Builds the api from its services (composed in main.ts): the only place that knows them all. */
export async function buildApi(services: ApiServices): Promise<Api> {
  const { settings, logger, log, taskReadModel } = services;
  const accountsStore = new AccountsStore(services.folds, 'api', { writesSnapshots: true });
  const tasksStore = new TasksStore(services.folds, 'api', taskReadModel);
  const taskCodec = createEventCodec<TaskEvent>();
  const fileCodec = createEventCodec<FileEvent>();
  const files = new FileCatalog({
    readModel: services.fileReadModel,
    logEnds: () => log.endOffsets(services.topics.files),
    append: async (fileId, events) => appendEvents(await log.writer(), fileCodec, services.topics.files, fileId, events),
    ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
    waitMs: settings.MERIDIAN_FILES_READ_MODEL_WAIT_MS,
    logger: logger.child({ component: 'files' }),
  });
  const exportDeps: ExportDeps = { log, topics: services.topics, topicPrefix: settings.MERIDIAN_TOPIC_PREFIX };
  // Per instance: what this process is receiving or streaming for each user right now.
  const uploadsInFlight = new PerUserSlots(settings.MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER, { setting: 'MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER', noun: 'uploads in progress' });
  const downloads = new PerUserSlots(settings.MERIDIAN_MAX_DOWNLOADS_PER_USER, { setting: 'MERIDIAN_MAX_DOWNLOADS_PER_USER', noun: 'downloads streaming' });
  const taskWaits = new PerUserSlots(settings.MERIDIAN_MAX_TASK_WAITERS_PER_USER, { setting: 'MERIDIAN_MAX_TASK_WAITERS_PER_USER', noun: 'task waits (GET /api/v1/tasks/{task_id}?wait=N)' });
  const cursors = cursorSealFromSetting(settings.MERIDIAN_CURSOR_SECRET, logger);
  const metrics = createApiMetrics({
    tasks: () => tasksStore.state,
    finishedTasks: () => tasksStore.finished,
    consumerLag: () => ingestLag(services),
    awaitingProjection: () => tasksStore.pointsAwaitingProjection,
    folds: () => [
      { fold: 'accounts', eventsReadAtStart: accountsStore.startup?.eventsRead ?? null },
      { fold: 'tasks', eventsReadAtStart: tasksStore.eventsReadAtStart },
    ],
  });
  // The push writers' transactional ids are this instance's: a restart under the same name fences
  // what a dead predecessor left open. Unnamed, it is made unique: two live writers with one id would
  // fence each other without end, and a dead one's transaction ends by its timeout anyway.
  const instance = settings.MERIDIAN_API_INSTANCE || `${hostname().replace(/[^A-Za-z0-9._-]/g, '_')}-${randomBytes(6).toString('hex')}`;
  const pushWriters = Array.from({ length: settings.MERIDIAN_PUSH_WRITERS }, (_, k) =>
    log.transactional(`${settings.MERIDIAN_TOPIC_PREFIX}api-push-${instance}-${k}`, { transactionTimeoutMs: settings.MERIDIAN_PUSH_TRANSACTION_TIMEOUT_MS, firstRetryMs: PUSH_FIRST_RETRY_MS }));
  const partitions = topicPartitions(services);
  const pointsCodec = createEventCodec<PointsFact>();
  const pushLog = new PushLog({
    writers: pushWriters.map((w) => ({ transaction: () => w.transaction(), renew: async () => { await w.disconnect(); await w.connect(); } })),
    deadlineMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
    topics: { points: services.topics.points, tasks: services.topics.tasks },
    partitions,
    pointsCodec,
    taskCodec,
    bytesPerPartition: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION,
    bytesPerTransaction: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST,
    logger: logger.child({ component: 'push' }),
    committed: (pushes) => metrics.pushesCommitted(pushes),
  });
  const push = settings.MERIDIAN_PUSH_MAX_BYTES > 0 ? {
    maxBytes: settings.MERIDIAN_PUSH_MAX_BYTES,
    log: pushLog,
    maxLagPoints: settings.MERIDIAN_PUSH_MAX_LAG_POINTS,
    awaitingProjection: () => tasksStore.pointsAwaitingProjection,
    pointsPartitions: async () => (await partitions()).points,
    parse: {
      batchPoints: settings.MERIDIAN_POINT_BATCH_SIZE,
      maxLineLength: settings.MERIDIAN_MAX_LINE_BYTES,
      maxColumns: settings.MERIDIAN_MAX_COLUMNS,
      maxJsonDocumentLength: settings.MERIDIAN_MAX_JSON_DOCUMENT_BYTES,
    },
  } : undefined;
  const submit: SubmitDeps = {
    producer: () => log.writer(),
    codec: taskCodec,
    topic: services.topics.tasks,
    ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
    find: (taskId) => tasksStore.find(taskId),
    applied: (position) => tasksStore.waitFor(position),
    settled: async (taskId) => tasksStore.syncToEnd([partitionFor(taskId, (await partitions()).tasks)]),
  };
  const jsonChecker = jsonCheckPool({ workers: settings.MERIDIAN_JSON_UPLOAD_CHECK_WORKERS, heapMb: settings.MERIDIAN_JSON_UPLOAD_CHECK_HEAP_MB, maxValues: settings.MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD });
  const probes = [
    ...services.probes,
    caughtUp('accounts', accountsStore),
    caughtUp('tasks', tasksStore),
  ];
  const adminListener = settings.MERIDIAN_ADMIN_PORT !== '';
  const app = createApp({
    logger,
    probes,
    readyTimeoutMs: settings.MERIDIAN_READY_TIMEOUT_MS,
    smallJsonBodyBytes: settings.MERIDIAN_MAX_SMALL_JSON_BODY_BYTES,
    maxUrlBytes: settings.MERIDIAN_MAX_URL_BYTES,
    adminListener,
    accounts: {
      get state() { return accountsStore.state; },
      get ready() { return accountsStore.ready; },
      execute: async (userName, decide) => accountsStore.execute(userName, decide, await log.writer()),
      // Usage once the projection has reached the files log's end (bounded): a file whose task succeeded counts.
      fileUsage: async (userNames) => {
        await files.current();
        const usage = await files.usage(userNames);
        return new Map(userNames.map((userName) => [userName, {
          bytes_used: usage.get(userName)?.bytes ?? 0,
          quota_bytes: fileQuotaOf(accountsStore.state.users.get(userName), settings.MERIDIAN_FILE_QUOTA_BYTES),
        }]));
      },
    },
    tasks: {
      live: () => tasksStore.state,
      find: (taskId) => tasksStore.find(taskId),
      readModel: taskReadModel,
      syncToEnd: () => tasksStore.syncToEnd(),
      cursors,
      waits: {
        untilEnded: (taskId, ms, signal) => tasksStore.ends.wait(taskId, ms, signal),
        slots: taskWaits,
        maxSeconds: settings.MERIDIAN_TASK_MAX_WAIT_SECONDS,
      },
    },
    download: {
      conn: services.clickhouseOptions,
      catalog: services.catalog,
      limits: { maxRowsCeiling: settings.MERIDIAN_MAX_ROWS_CEILING, maxListNames: settings.MERIDIAN_MAX_DOWNLOAD_NAMES, maxRollupRows: settings.MERIDIAN_MAX_ROLLUP_ROWS },
      batchRows: settings.MERIDIAN_DOWNLOAD_BATCH_ROWS,
      maxBodyBytes: settings.MERIDIAN_MAX_DOWNLOAD_BODY_BYTES,
      cursors,
      streams: downloads,
    },
    series: {
      conn: services.clickhouseOptions,
      catalog: services.catalog,
      limits: { maxPoints: settings.MERIDIAN_MAX_SERIES_POINTS, maxSeries: settings.MERIDIAN_MAX_SERIES_PER_REQUEST },
    },
    prometheus: {
      conn: services.clickhouseOptions,
      catalog: services.catalog,
      limits: {
        maxSamples: settings.MERIDIAN_PROMQL_MAX_SAMPLES,
        maxSeries: settings.MERIDIAN_PROMQL_MAX_SERIES,
        maxPointsPerSeries: settings.MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES,
        timeoutMs: settings.MERIDIAN_PROMQL_TIMEOUT_MS,
      },
      reduceRatio: settings.MERIDIAN_PROMQL_REDUCE_RATIO,
      maxBodyBytes: settings.MERIDIAN_MAX_SMALL_JSON_BODY_BYTES,
    },
    catalog: { catalog: services.catalog, maxListNames: settings.MERIDIAN_MAX_DOWNLOAD_NAMES, pageCeiling: settings.MERIDIAN_MAX_CATALOG_PAGE },
    events: {
      plan: (request) => planExport(exportDeps, request),
      stream: (plan, request, signal) => streamExport(exportDeps, plan, request, signal),
      maxEventsCeiling: settings.MERIDIAN_MAX_ROWS_CEILING,
      cursors,
      streams: downloads,
    },
    ...(push ? {
      telemetry: {
        submit,
        push,
        limits: compileLimits({ maxBytes: settings.MERIDIAN_PROTOCOL_MAX_BYTES, maxSeries: settings.MERIDIAN_PROTOCOL_MAX_SERIES, maxSamples: settings.MERIDIAN_PROTOCOL_MAX_SAMPLES }),
        maxBodyBytes: settings.MERIDIAN_PUSH_MAX_BYTES,
        pointsCodec,
        inFlight: uploadsInFlight,
      },
    } : {}),
    uploads: {
      storage: services.blobs,
      limits: {
        jsonBodyBytes: settings.MERIDIAN_MAX_JSON_BODY_BYTES,
        uploadBytes: settings.MERIDIAN_MAX_UPLOAD_BYTES,
        pointsPerJsonUpload: settings.MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD,
      },
      jsonChecker,
      ...(push ? { push } : {}),
      caps: {
        inFlight: uploadsInFlight,
        queuedTasks: settings.MERIDIAN_MAX_QUEUED_TASKS_PER_USER,
        unfinished: () => tasksStore.unfinished,
        backlog: { perUser: settings.MERIDIAN_UPLOAD_BACKLOG_PER_USER, waitMs: settings.MERIDIAN_UPLOAD_BACKLOG_WAIT_MS, untilOneEnds: (user, ms, signal) => tasksStore.ends.waitForUser(user, ms, signal) },
      },
      submit,
      metrics,
    },
    files: {
      storage: services.blobs,
      files,
      tasks: () => tasksStore.state,
      submit: {
        producer: () => log.writer(),
        codec: taskCodec,
        topic: services.topics.tasks,
        ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
        applied: (position) => tasksStore.waitFor(position),
      },
      limits: { uploadBytes: settings.MERIDIAN_MAX_UPLOAD_BYTES, defaultQuotaBytes: settings.MERIDIAN_FILE_QUOTA_BYTES, filesPerUser: settings.MERIDIAN_MAX_FILES_PER_USER, grantsPerFile: settings.MERIDIAN_MAX_GRANTS_PER_FILE },
    },
    limits: {
      requestTimeoutMs: settings.MERIDIAN_REQUEST_TIMEOUT_MS,
      rateLimitPerSecond: settings.MERIDIAN_RATE_LIMIT_PER_SECOND,
      rateLimitBurst: settings.MERIDIAN_RATE_LIMIT_BURST,
      apiKeysPerUser: settings.MERIDIAN_MAX_API_KEYS_PER_USER,
    },
    metrics,
  });
  return {
    app,
    adminApp: adminListener ? createAdminApp({ logger, probes, readyTimeoutMs: settings.MERIDIAN_READY_TIMEOUT_MS, metrics }) : null,
    accounts: accountsStore,
    tasks: tasksStore,
    files,
    async start() {
      // The push writer connects first: its id fences a transaction a predecessor under the same
      // instance name left open, which would otherwise hold the tasks fold's catch-up until it times out.
      for (const w of pushWriters) w.connect().catch((error: unknown) => logger.warn({ err: error }, 'a push writer could not connect yet; its first push tries again'));
      await Promise.all([accountsStore.start(), tasksStore.start()]);
      logger.info({ users: accountsStore.state.users.size, tasks: tasksStore.state.size, tasks_events_read: tasksStore.eventsReadAtStart }, 'caught up with the accounts and tasks logs');
    },
    async stop() {
      // Long-polls answer now with their task as it is, instead of holding the shutdown.
      tasksStore.ends.close();
      await Promise.all([accountsStore.stop(), tasksStore.stop(), jsonChecker.close(), ...pushWriters.map((w) => w.disconnect())]);
    },
  };
}
