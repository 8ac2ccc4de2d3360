import type Koa from 'koa';
import type { TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { AccountsStore, TasksStore, type Platform } from '@meridian/platform';
import { createApp } from './app.ts';

export type Api = {
  readonly app: Koa;
  readonly accounts: AccountsStore;
  readonly tasks: TasksStore;
  /** Starts following the logs the api serves from; resolves once they have caught up. */
  start(): Promise<void>;
  stop(): Promise<void>;
};

/** Composes the api from the platform's adapters: the only place that knows them all. */
export async function buildApi(platform: Platform): Promise<Api> {
  const { settings, logger } = platform;
  const accountsStore = new AccountsStore(platform, 'api');
  const tasksStore = new TasksStore(platform, 'api');
  const app = createApp({
    logger,
    probes: [
      ...platform.probes,
      { name: 'accounts', check: async () => { if (!accountsStore.ready) throw new Error('catching up with the accounts log'); } },
      { name: 'tasks', check: async () => { if (!tasksStore.ready) throw new Error('catching up with the tasks log'); } },
    ],
    readyTimeoutMs: settings.MERIDIAN_READY_TIMEOUT_MS,
    accounts: {
      get state() { return accountsStore.state; },
      get ready() { return accountsStore.ready; },
      execute: async (userName, decide) => accountsStore.execute(userName, decide, await platform.producer()),
    },
    tasks: { state: () => tasksStore.state, syncToEnd: () => tasksStore.syncToEnd() },
    uploads: {
      storage: platform.storage,
      limits: {
        jsonBodyBytes: settings.MERIDIAN_MAX_JSON_BODY_BYTES,
        uploadBytes: settings.MERIDIAN_MAX_UPLOAD_BYTES,
        pointsPerJsonUpload: settings.MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD,
        inlinePayloadBytes: settings.MERIDIAN_INLINE_PAYLOAD_BYTES,
      },
      submit: {
        producer: () => platform.producer(),
        codec: createEventCodec<TaskEvent>(),
        topic: platform.topics.tasks,
        ackTimeoutMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
        tasks: () => tasksStore.state,
        applied: (position) => tasksStore.waitFor(position),
      },
    },
  });
  return {
    app,
    accounts: accountsStore,
    tasks: tasksStore,
    async start() {
      await Promise.all([accountsStore.start(), tasksStore.start()]);
      logger.info({ users: accountsStore.state.users.size, tasks: tasksStore.state.size }, 'caught up with the accounts and tasks logs');
    },
    async stop() {
      await Promise.all([accountsStore.stop(), tasksStore.stop()]);
    },
  };
}
