import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type Koa from 'koa';
import type { TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { partitionFor } from '@meridian/kafka';
import { AccountsStore, TasksStore } from '@meridian/folds';
import { accountsCommands } from './accounts/deps.ts';
import type { ApiParts } from './api-parts.ts';
import type { ApiServices } from './api-services.ts';
import { createAdminApp } from './admin-app.ts';
import { createApp } from './app.ts';
import { createDeletions } from './deletions/deps.ts';
import { catalogDeps } from './catalog/deps.ts';
import { downloadDeps, seriesDeps } from './downloads/deps.ts';
import { eventsDeps } from './events/deps.ts';
import type { FileCatalog } from './files/catalog.ts';
import { createFileCatalog, fileDeps } from './files/deps.ts';
import { BodyBudget } from './http/body-budget.ts';
import { cursorSealFromSetting } from './http/cursor-seal.ts';
import { PerUserSlots } from './http/per-user-slots.ts';
import { pointsArchiveLag } from './observability/archive-lag.ts';
import { ingestLag } from './observability/ingest-lag.ts';
import { createApiMetrics } from './observability/metrics.ts';
import { promqlDeps } from './prometheus/deps.ts';
import { taskReads } from './tasks/deps.ts';
import { telemetryDeps } from './telemetry/deps.ts';
import { uploadDeps } from './uploads/deps.ts';
import { jsonCheckPool } from './uploads/json-check-pool.ts';
import { createPushPath } from './uploads/push-path.ts';

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
  return {
    name,
    check: async () => {
      if (!store.ready) throw new Error(`catching up with the ${name} log`);
    },
  };
}

/**
 * The points and tasks topics' partition counts, read once (a push's records are placed by the
 * producer's own rule, to know their offsets); a failed read is tried again by the next push.
 */
function topicPartitions(services: ApiServices): () => Promise<{ points: number; tasks: number }> {
  let counts: Promise<{ points: number; tasks: number }> | null = null;
  return () => {
    counts ??= Promise.all([services.log.endOffsets(services.topics.points), services.log.endOffsets(services.topics.tasks)]).then(([points, tasks]) => ({
      points: points.size,
      tasks: tasks.size,
    }));
    counts.catch(() => {
      counts = null;
    });
    return counts;
  };
}

/** The parts the slices share: the folds, the per-user slots, the metrics and the way commands are written. */
function sharedParts(services: ApiServices): ApiParts {
  const { settings, logger, log } = services;
  const accounts = new AccountsStore(services.folds, 'api', { writesSnapshots: true });
  const tasks = new TasksStore(services.folds, 'api', services.taskReadModel);
  const taskCodec = createEventCodec<TaskEvent>();
  const partitions = topicPartitions(services);
  const bodies = new BodyBudget(settings.MERIDIAN_BODY_BYTES_IN_FLIGHT, settings.MERIDIAN_BODY_WAIT_MS);
  const metrics = createApiMetrics({
    bodies: () => ({ held: bodies.held, waiting: bodies.waiting }),
    tasks: () => tasks.state,
    finishedTasks: () => tasks.finished,
    consumerLag: () => ingestLag(services),
    archiveLag: () => pointsArchiveLag(services),
    awaitingProjection: () => tasks.pointsAwaitingProjection,
    folds: () => [
      { fold: 'accounts', eventsReadAtStart: accounts.startup?.eventsRead ?? null },
      { fold: 'tasks', eventsReadAtStart: tasks.eventsReadAtStart },
    ],
  });
  return {
    services,
    settings,
    accounts,
    tasks,
    taskCodec,
    cursors: cursorSealFromSetting(settings.MERIDIAN_CURSOR_SECRET, logger),
    bodies,
    slots: {
      uploads: new PerUserSlots(settings.MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER, {
        setting: 'MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER',
        noun: 'uploads in progress',
      }),
      downloads: new PerUserSlots(settings.MERIDIAN_MAX_DOWNLOADS_PER_USER, { setting: 'MERIDIAN_MAX_DOWNLOADS_PER_USER', noun: 'downloads streaming' }),
      taskWaits: new PerUserSlots(settings.MERIDIAN_MAX_TASK_WAITERS_PER_USER, {
        setting: 'MERIDIAN_MAX_TASK_WAITERS_PER_USER',
        noun: 'task waits (GET /api/v1/tasks/{task_id}?wait=N)',
      }),
    },
    metrics,
    partitions,
    submit: {
      producer: () => log.writer(),
      codec: taskCodec,
      topic: services.topics.tasks,
      ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
      find: (taskId) => tasks.find(taskId),
      applied: (position) => tasks.waitFor(position),
      settled: async (taskId) => tasks.syncToEnd([partitionFor(taskId, (await partitions()).tasks)]),
    },
    // Unnamed, it is made unique: two live writers with one id would fence each other without
    // end, and a dead one's transaction ends by its timeout anyway.
    instance: settings.MERIDIAN_API_INSTANCE || `${hostname().replace(/[^A-Za-z0-9._-]/g, '_')}-${randomBytes(6).toString('hex')}`,
  };
}

/** Builds the api from its services (composed in main.ts): each slice builds its own dependencies from the shared parts. */
export async function buildApi(services: ApiServices): Promise<Api> {
  const { settings, logger } = services;
  const parts = sharedParts(services);
  const { accounts, tasks, metrics } = parts;
  const files = createFileCatalog(parts);
  const pushPath = createPushPath(parts);
  const push = pushPath.deps;
  const deletions = createDeletions(parts, pushPath.pointsCodec);
  const jsonChecker = jsonCheckPool({
    workers: settings.MERIDIAN_JSON_UPLOAD_CHECK_WORKERS,
    heapMb: settings.MERIDIAN_JSON_UPLOAD_CHECK_HEAP_MB,
    maxValues: settings.MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD,
    inlineBytes: settings.MERIDIAN_JSON_UPLOAD_CHECK_INLINE_BYTES,
  });
  const probes = [...services.probes, caughtUp('accounts', accounts), caughtUp('tasks', tasks)];
  const adminListener = settings.MERIDIAN_ADMIN_PORT !== '';
  const app = createApp({
    logger,
    probes,
    readyTimeoutMs: settings.MERIDIAN_READY_TIMEOUT_MS,
    smallJsonBodyBytes: settings.MERIDIAN_MAX_SMALL_JSON_BODY_BYTES,
    maxUrlBytes: settings.MERIDIAN_MAX_URL_BYTES,
    adminListener,
    accounts: accountsCommands(parts, files),
    tasks: taskReads(parts),
    download: downloadDeps(parts),
    deletions: deletions.deps,
    series: seriesDeps(parts),
    prometheus: promqlDeps(parts),
    catalog: catalogDeps(parts),
    events: eventsDeps(parts),
    ...(push ? { telemetry: telemetryDeps(parts, push, pushPath) } : {}),
    uploads: uploadDeps(parts, push, jsonChecker),
    files: fileDeps(parts, files),
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
    accounts,
    tasks,
    files,
    async start() {
      pushPath.connect();
      deletions.connect();
      await Promise.all([accounts.start(), tasks.start()]);
      logger.info(
        { users: accounts.state.users.size, tasks: tasks.state.size, tasks_events_read: tasks.eventsReadAtStart },
        'caught up with the accounts and tasks logs',
      );
    },
    async stop() {
      // Long-polls answer now with their task as it is, instead of holding the shutdown.
      tasks.ends.close();
      await Promise.all([accounts.stop(), tasks.stop(), jsonChecker.close(), pushPath.disconnect(), deletions.disconnect()]);
    },
  };
}
