import type { Producer } from 'kafkajs';
import type { PointsFact, TaskEvent } from '@meridian/domain';
import { createEventCodec, UndecodableEventError } from '@meridian/events';
import { createProducer, TASKS_PARTITIONS } from '@meridian/kafka';
import { AccountsStore, runConsumer, TasksStore, type Platform } from '@meridian/platform';
import { failTask, runUploadJob, type UploadJobDeps } from './upload-job.ts';
import { UploadTally } from './tally.ts';
import { uploadLimitsFrom } from './limits.ts';
import { startFileCommands } from '../files/file-commands.ts';
import type { CommandPosition } from '../command-tx.ts';
import { sendToDeadLetter } from '../dead-letter.ts';
import { removeStaged } from '../staging.ts';

export type RunningWorker = { stop(): Promise<void> };

/**
 * Consumes the tasks topic and runs the commands in it (uploads); the lifecycle events
 * beside them are not for this consumer and pass by. One transactional producer per input
 * partition, so a restarted worker fences its predecessor's open transaction.
 */
export async function startCommandConsumer(platform: Platform): Promise<RunningWorker> {
  const { kafka, topics, settings, logger } = platform;
  const groupId = `${settings.MERIDIAN_TOPIC_PREFIX}ingest-commands`;
  const accounts = new AccountsStore(platform, 'ingest');
  await accounts.start();
  const tasks = new TasksStore(platform, 'ingest');
  await tasks.start();
  const finished = new RecentSet<string>(100_000);
  const fileCommands = await startFileCommands(platform, groupId);
  const progressProducer = await platform.producer();
  const transactional = new Map<number, Promise<Producer>>();
  const producerFor = (partition: number) => {
    let p = transactional.get(partition);
    if (!p) {
      const producer = createProducer(kafka, { transactionalId: `${groupId}-p${partition}` });
      p = producer.connect().then(() => producer);
      transactional.set(partition, p);
    }
    return p;
  };
  const codec = createEventCodec<TaskEvent>();
  const deps: Omit<UploadJobDeps, 'heartbeat'> = {
    topics,
    storage: platform.storage,
    logger: logger.child({ component: 'uploads' }),
    taskCodec: codec,
    pointsCodec: createEventCodec<PointsFact>(),
    progressProducer,
    consumerGroupId: groupId,
    batchPoints: settings.MERIDIAN_POINT_BATCH_SIZE,
    maxBufferedPoints: settings.MERIDIAN_POINT_BATCH_SIZE * 8,
    limits: uploadLimitsFrom(settings),
    user: (name) => accounts.state.users.get(name),
    syncAccounts: () => accounts.syncToEnd(),
  };

  const consumer = kafka.consumer({ groupId, sessionTimeout: settings.KAFKA_SESSION_TIMEOUT_MS, maxWaitTimeInMs: 250 });
  consumer.on(consumer.events.GROUP_JOIN, (e) => logger.info({ group: e.payload.groupId, assignment: e.payload.memberAssignment }, 'joined consumer group'));
  await runConsumer(platform, consumer, topics.tasks, {
    // Every tasks partition at once: an upload spends much of its time waiting on Kafka round
    // trips (transaction, offsets, commit), which other partitions' uploads fill. Each partition
    // has its own transactional producer, and a task's commands all share its partition.
    partitionsConsumedConcurrently: TASKS_PARTITIONS,
    eachMessage: async ({ topic, partition, message, heartbeat }) => {
      const at = { topic, partition, offset: Number(message.offset) };
      let event: TaskEvent;
      try {
        event = codec.decode(message.value ?? Buffer.alloc(0));
      } catch (error) {
        if (!(error instanceof UndecodableEventError)) throw error;
        await deadLetter(platform, at, message.value, error.message);
        return;
      }
      if (event.type === 'FileDefinitionRequested') {
        await fileCommands.run(event, at, await producerFor(partition), heartbeat);
        return;
      }
      if (event.type !== 'MetricsUploadRequested') return;
      const producer = await producerFor(partition); // fences a predecessor's open transaction first
      // The same task can be commanded twice (a retry with the same Idempotency-Key after a
      // 503 whose send still landed): run it once. Tasks finished before this process started
      // are in the fold (caught up at start); ones it finished itself are remembered here,
      // because right after a commit the fold may not show it yet.
      const known = tasks.state.get(event.task_id);
      if (finished.has(event.task_id) || (known && (known.result !== null || known.status === 'failed' || known.status === 'succeeded'))) {
        logger.info({ task_id: event.task_id, offset: at.offset }, 'command for a finished task skipped');
        return;
      }
      for (let attempt = 1; ; attempt++) {
        try {
          await runUploadJob(event, at, producer, { ...deps, heartbeat });
          break;
        } catch (error) {
          if (isKafkaRetriable(error)) throw error; // kafkajs redelivers the command
          // Storage or network trouble passes; an accepted upload is not failed for it at once.
          if (attempt < settings.MERIDIAN_UPLOAD_ATTEMPTS) {
            const delay = Math.min(500 * 2 ** (attempt - 1), 10_000);
            logger.warn({ err: error, task_id: event.task_id, attempt, retry_in_ms: delay }, 'upload attempt failed; retrying');
            await sleepWithHeartbeat(delay, heartbeat);
            continue;
          }
          logger.error({ err: error, task_id: event.task_id, attempts: attempt }, 'upload failed after every attempt');
          await deadLetter(platform, at, message.value, (error as Error).message);
          await failTask(producer, deps as UploadJobDeps, at, event, new UploadTally(), `the upload could not be processed: ${(error as Error).message}`);
          break;
        }
      }
      finished.add(event.task_id);
      // The task has ended in the log (its points or its failure): the claim check is spent.
      if (event.staged_object !== null) await removeStaged(platform.storage, event.staged_object, logger);
    },
  });
  return {
    async stop() {
      await consumer.disconnect();
      await Promise.allSettled([...transactional.values()].map(async (p) => (await p).disconnect()));
      await fileCommands.stop();
      await Promise.all([accounts.stop(), tasks.stop()]);
    },
  };
}

/** The last `capacity` values added: enough to recognise a repeat that follows soon after. */
class RecentSet<T> {
  private readonly items = new Set<T>();
  private readonly capacity: number;
  constructor(capacity: number) {
    this.capacity = capacity;
  }
  add(value: T): void {
    this.items.add(value);
    if (this.items.size > this.capacity) this.items.delete(this.items.values().next().value as T);
  }
  has(value: T): boolean {
    return this.items.has(value);
  }
}

async function sleepWithHeartbeat(ms: number, heartbeat: () => Promise<void>): Promise<void> {
  for (let left = ms; left > 0; left -= 1000) {
    await new Promise((r) => setTimeout(r, Math.min(1000, left)));
    await heartbeat();
  }
}

/** Kafka's own transient errors are retried by redelivery of the command. */
function isKafkaRetriable(error: unknown): boolean {
  // kafkajs is CommonJS and its error classes are not importable by name from ESM: check the shape.
  const e = error as { name?: string; retriable?: boolean } | null;
  return e?.retriable === true && typeof e.name === 'string' && e.name.startsWith('KafkaJS');
}

/** A command that cannot be run goes to the dead-letter topic as it came, without a key. */
async function deadLetter(platform: Platform, at: CommandPosition, value: Buffer | null, reason: string): Promise<void> {
  await sendToDeadLetter(await platform.producer(), platform.topics.deadLetter, { ...at, key: null, value, reason });
}
