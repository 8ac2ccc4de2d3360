import type Koa from 'koa';
import { fileQuotaOf, type FileEvent, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
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
    folds: () => [
      { fold: 'accounts', eventsReadAtStart: accountsStore.startup?.eventsRead ?? null },
      { fold: 'tasks', eventsReadAtStart: tasksStore.eventsReadAtStart },
    ],
  });
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
      limits: { maxRowsCeiling: settings.MERIDIAN_MAX_ROWS_CEILING, maxListNames: settings.MERIDIAN_MAX_DOWNLOAD_NAMES },
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
    uploads: {
      storage: services.blobs,
      limits: {
        jsonBodyBytes: settings.MERIDIAN_MAX_JSON_BODY_BYTES,
        uploadBytes: settings.MERIDIAN_MAX_UPLOAD_BYTES,
        pointsPerJsonUpload: settings.MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD,
      },
      jsonChecker,
      caps: {
        inFlight: uploadsInFlight,
        queuedTasks: settings.MERIDIAN_MAX_QUEUED_TASKS_PER_USER,
        unfinished: () => tasksStore.unfinished,
        backlog: { perUser: settings.MERIDIAN_UPLOAD_BACKLOG_PER_USER, waitMs: settings.MERIDIAN_UPLOAD_BACKLOG_WAIT_MS, untilOneEnds: (user, ms, signal) => tasksStore.ends.waitForUser(user, ms, signal) },
      },
      submit: {
        producer: () => log.writer(),
        codec: taskCodec,
        topic: services.topics.tasks,
        ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
        find: (taskId) => tasksStore.find(taskId),
        applied: (position) => tasksStore.waitFor(position),
      },
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
      await Promise.all([accountsStore.start(), tasksStore.start()]);
      logger.info({ users: accountsStore.state.users.size, tasks: tasksStore.state.size, tasks_events_read: tasksStore.eventsReadAtStart }, 'caught up with the accounts and tasks logs');
    },
    async stop() {
      // Long-polls answer now with their task as it is, instead of holding the shutdown.
      tasksStore.ends.close();
      await Promise.all([accountsStore.stop(), tasksStore.stop(), jsonChecker.close()]);
    },
  };
}
