import type { TaskEvent, UserRecord } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import type { ConsumerWatch } from '@meridian/kafka';
import { AccountsStore, TasksStore } from '@meridian/folds';
import { runConsumer } from '@meridian/runtime';
import { dispatchBatch, type DispatchDeps } from './dispatch.ts';
import { taskLog, type CommandHandlers, type TaskLog } from './handlers.ts';
import { OffsetCommits } from './offset-commits.ts';
import { CommandRunner } from './runner.ts';
import { sendToDeadLetter } from '../dead-letter.ts';
import type { IngestDeps } from '../ingest-deps.ts';
import type { CommandConsumerOptions } from './options.ts';

export type RunningWorker = { readonly watch: ConsumerWatch; stop(): Promise<void> };

/** What the handlers are built on: the consumer's tasks topic and its accounts fold (read to its end before each command). */
export type HandlerContext = {
  readonly tasks: TaskLog;
  readonly user: (name: string) => UserRecord | undefined;
};

/**
 * The registry, started (the worker composes it: apps/ingest/src/worker.ts); stop() ends what the
 * handlers run beside, at the start of the shutdown: commands in flight still end under it.
 */
export type RunningHandlers = { readonly handlers: CommandHandlers; stop(): Promise<void> };

/**
 * Consumes the tasks topic and hands each command in it to its handler in the registry
 * (CommandHandlers: uploads, file definitions; started by `startHandlers`, which the worker
 * composes, so this folder knows no handler), which runs or refuses it; the lifecycle events
 * beside them have no handler and pass by. What is common to every command stays in this
 * folder: gathering a batch's commands (dispatch.ts), the decision to run, skip or refuse each,
 * the run's brackets in the log and one transactional producer per input partition (runner.ts),
 * the dead letters.
 *
 * Each run of a command is bracketed in the log: TaskStarted before it (acknowledged before
 * any work, so it survives the process dying on the command), and TaskReleased when it ends
 * without an outcome while this process lives on (Kafka trouble, a lost partition). A start
 * neither ended nor released is a worker that died on the command; decideStart fails the
 * command after MERIDIAN_MAX_COMMAND_STARTS of them, so no command can crash-loop the worker.
 *
 * Consecutive commands of a partition that their handler may run together (small uploads:
 * runGroup, one transaction) and none of whose runs died are gathered from the fetched batch,
 * up to MERIDIAN_UPLOAD_GROUP_MAX, and started together (one TaskStarted request); a command that
 * cannot join runs after them, and an offset is resolved only once everything before it ended.
 */
export async function startCommandConsumer(
  ingest: IngestDeps,
  options: CommandConsumerOptions,
  startHandlers: (context: HandlerContext) => Promise<RunningHandlers>,
): Promise<RunningWorker> {
  const { log, topics, logger } = ingest;
  const groupId = ingest.groups.commands;
  const accounts = new AccountsStore(ingest.folds, 'ingest', { writesSnapshots: true });
  const tasks = new TasksStore(ingest.folds, 'ingest', ingest.taskReadModel);
  // The folds (accounts: snapshot + tail; tasks: read model + tail) and the handlers (the file
  // commands fold nothing: their blob collector asks the files read model) start at once. What
  // must stay in order: all of them ready before the consumer below runs, since its first
  // decision (decide(): accounts, the task) reads them.
  const codec = createEventCodec<TaskEvent>();
  const taskEvents = taskLog(topics.tasks, codec, groupId);
  const [, , registry, progressProducer] = await Promise.all([
    accounts.start(),
    tasks.start(),
    startHandlers({ tasks: taskEvents, user: (name) => accounts.state.users.get(name) }),
    log.writer(),
  ]);
  // As the accounts fold logs its own: what this start read of the tasks topic (the tail past the read model).
  logger.info(
    { topic: topics.tasks, events_read: tasks.eventsReadAtStart, unfinished: tasks.state.size },
    'tasks fold caught up after the read model positions',
  );
  const offsets = new OffsetCommits(options.commitIntervalMs, logger);
  const runner = new CommandRunner({ log, groupId, accounts, tasks, taskEvents, progressProducer, offsets, maxStarts: options.maxStarts, logger });
  // Set before the consumer is stopped, so a command waiting on a read (decide) gives up and stop() returns.
  let stopping = false;
  const dispatch: DispatchDeps = {
    runner,
    handlers: registry.handlers,
    codec,
    logger,
    groupMax: options.groupMax,
    setAside: async (at, message, reason) => sendToDeadLetter(await log.writer(), topics.deadLetter, { ...at, key: message.key, value: message.value, reason }),
    running: () => !stopping,
  };
  const consumer = log.consumer({ groupId, sessionTimeoutMs: options.sessionTimeoutMs, maxWaitTimeMs: 250 });
  consumer.onJoin((e) => {
    logger.info({ group: e.groupId, assignment: e.assignment }, 'joined consumer group');
    runner.assigned(e.assignment[topics.tasks] ?? []);
  });
  const watch: ConsumerWatch = consumer.watch('commands');
  await runConsumer(
    consumer,
    topics.tasks,
    {
      // Every tasks partition at once: an upload spends much of its time waiting on Kafka round
      // trips (transaction, offsets, commit), which other partitions' uploads fill. Each partition
      // has its own transactional producer, and a task's commands all share its partition.
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
      eachBatchAutoResolve: false,
      // Most batches of the tasks topic hold no command (every push writes a MetricsPushed), and
      // kafkajs's autoCommit commits after each batch: an OffsetCommit request, a write to
      // __consumer_offsets, for every push. A command's run commits its own offset in its
      // outcome's transaction (handlers.ts); what is committed here only moves the group past the
      // events without a handler, so it goes at most once an interval (OffsetCommits). After
      // a crash, a stop or a rebalance, the next owner reads again the events of about that long
      // before it, and decides each command in them again: one that has ended is skipped
      // (runner.decide), as after a crash between an outcome and its commit.
      autoCommit: false,
      eachBatch: async (payload) => {
        await dispatchBatch(dispatch, payload);
        offsets.soon(payload);
      },
    },
    logger,
    ingest.startRetry,
  );

  return {
    watch,
    async stop() {
      stopping = true;
      // The handlers' work beside the commands (the blob collector) stops at once, beside the
      // consumer's grace, not after it: a blob removal started in the grace and cut by a SIGKILL
      // would leave a committed file without its bytes until another worker takes them over.
      await Promise.all([
        registry.stop(),
        (async () => {
          offsets.stop();
          await consumer.stop();
          await runner.close();
        })(),
      ]);
      await Promise.all([accounts.stop(), tasks.stop()]);
    },
  };
}
