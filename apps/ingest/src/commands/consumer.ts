import { decideStart, type StartDecision, type TaskEvent, type UserRecord } from '@meridian/domain';
import { createEventCodec, UndecodableEventError } from '@meridian/events';
import type { ConsumerWatch } from '@meridian/kafka';
import { AccountsStore, runConsumer, TasksStore } from '@meridian/platform';
import { handlerOf, taskLog, type CommandHandler, type CommandHandlers, type CommandRun, type TaskLog, type WorkerCommand } from './handlers.ts';
import { sendToDeadLetter } from '../dead-letter.ts';
import { persistWhileRunning, type Persist } from '../persist.ts';
import type { PartitionWriter } from '../event-log.ts';
import type { IngestDeps } from '../ingest-deps.ts';

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
 * beside them have no handler and pass by. What is common to every command stays here: the
 * decision to run, skip or refuse it (decideStart), the run's brackets in the log, the dead
 * letters. One transactional producer per input partition, so a restarted worker fences its
 * predecessor's open transaction.
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
export async function startCommandConsumer(ingest: IngestDeps, startHandlers: (context: HandlerContext) => Promise<RunningHandlers>): Promise<RunningWorker> {
  const { log, topics, settings, logger } = ingest;
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
    accounts.start(), tasks.start(), startHandlers({ tasks: taskEvents, user: (name) => accounts.state.users.get(name) }), log.writer(),
  ]);
  const { handlers } = registry;
  // As the accounts fold logs its own: what this start read of the tasks topic (the tail past the read model).
  logger.info({ topic: topics.tasks, events_read: tasks.eventsReadAtStart, unfinished: tasks.state.size }, 'tasks fold caught up after the read model positions');
  const finished = new RecentSet<string>(100_000);
  // Replaced after a transaction that did not end cleanly (the log's transactional writer); how
  // many replacements each partition's commands have seen, to re-read the tasks log after one.
  const transactional = new Map<number, PartitionWriter>();
  const replacementsSeen = new Map<number, number>();
  const producerFor = (partition: number) => {
    let p = transactional.get(partition);
    if (!p) {
      p = log.transactional(`${groupId}-p${partition}`);
      transactional.set(partition, p);
    }
    return p;
  };
  const consumer = log.consumer({ groupId, sessionTimeoutMs: settings.KAFKA_SESSION_TIMEOUT_MS, maxWaitTimeMs: 250 });
  // Set before the consumer is stopped, so a command waiting on a read (decide) gives up and stop() returns.
  let stopping = false;
  consumer.onJoin((e) => logger.info({ group: e.groupId, assignment: e.assignment }, 'joined consumer group'));
  const watch: ConsumerWatch = consumer.watch('commands');
  await runConsumer(consumer, topics.tasks, {
    // Every tasks partition at once: an upload spends much of its time waiting on Kafka round
    // trips (transaction, offsets, commit), which other partitions' uploads fill. Each partition
    // has its own transactional producer, and a task's commands all share its partition.
    partitionsConsumedConcurrently: settings.KAFKA_TASKS_PARTITIONS,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      const { topic, partition } = batch;
      const producer = producerFor(partition);
      // Commands decided to run together (their handler's runGroup), not started yet; and the
      // last message dealt with, resolved only once nothing before it is pending.
      let group: Array<{ cmd: WorkerCommand; run: CommandRun }> = [];
      let groupHandler: CommandHandler<WorkerCommand> | undefined;
      let dealtWith: string | null = null;
      let beforeGroup: string | null = null;
      const settle = async () => {
        if (group.length > 0) {
          const [items, handler] = [group, groupHandler!];
          group = [];
          await startRuns(handler, items, partition);
        }
        if (dealtWith !== null) resolveOffset(dealtWith);
        await heartbeat();
      };
      const ours = () => isRunning() && !isStale();
      for (const message of batch.messages) {
        if (!ours()) break;
        const at = { topic, partition, offset: Number(message.offset) };
        const setAside = async (reason: string) => {
          await sendToDeadLetter(await log.writer(), topics.deadLetter, { ...at, key: message.key, value: message.value, reason });
        };
        let event: TaskEvent;
        try {
          event = codec.decode(message.value ?? Buffer.alloc(0));
        } catch (error) {
          if (!(error instanceof UndecodableEventError)) throw error;
          await settle();
          await setAside(error.message);
          dealtWith = message.offset;
          continue;
        }
        const handler = handlerOf(handlers, event.type);
        const cmd = event as WorkerCommand;
        if (handler === undefined) {
          dealtWith = message.offset;
          continue;
        }
        // A second command for a task of the group (a retried send) waits for the group's end, then finds it finished.
        if (group.some((item) => item.cmd.task_id === cmd.task_id)) await settle();
        await producer.connect(); // fences a predecessor's open transaction and settles it first
        const run: CommandRun = { at, producer, heartbeat, setAside };
        // The same task can be commanded twice (a retry with the same Idempotency-Key after a
        // 503 whose send still landed): run it once. Finished tasks are in the fold or, once the
        // read model covers them, in the read model (decide asks both); ones this process finished
        // itself are remembered here, because right after a commit the fold may not show it yet.
        // Thrown Stopping leaves the command unconsumed, for the next owner.
        const persist = persistWhileRunning(logger, { isRunning: () => !stopping, heartbeat });
        // While a group gathers, the commands after its first share the accounts log read made for it (no I/O between them).
        const decided = finished.has(cmd.task_id) ? { decision: { kind: 'skip' } as const, crashes: 0 } : await decide(cmd, partition, persist, group.length === 0);
        const { decision } = decided;
        if (decision.kind === 'skip') {
          logger.info({ task_id: cmd.task_id, offset: at.offset }, 'command for a finished task skipped');
          dealtWith = message.offset;
          continue;
        }
        // Only commands none of whose runs died go together: one that may crash the process
        // runs alone, so it cannot take its neighbours' starts with it again.
        const joins = decision.kind === 'run' && decided.crashes === 0 && handler.runGroup !== undefined && handler.groups?.(cmd) === true;
        if (joins && group.length > 0 && (handler !== groupHandler || group.length >= settings.MERIDIAN_UPLOAD_GROUP_MAX)) await settle();
        if (joins) {
          if (group.length === 0) beforeGroup = dealtWith;
          group.push({ cmd, run });
          groupHandler = handler;
          dealtWith = message.offset;
          continue;
        }
        await settle();
        if (decision.kind === 'fail') {
          logger.warn({ task_id: cmd.task_id, offset: at.offset, reason: decision.reason }, 'command refused');
          if (decision.deadLetter) await setAside(decision.reason);
          await handler.refuse(cmd, run, decision.reason);
          finished.add(cmd.task_id);
        } else {
          await startRuns(handler, [{ cmd, run }], partition);
        }
        dealtWith = message.offset;
      }
      // Stopping, or the partition taken: a group not started yet is left to the next owner, unresolved.
      if (!ours() && group.length > 0) {
        group = [];
        dealtWith = beforeGroup;
      }
      await settle();
    },
  }, logger, ingest.startRetry);

  /**
   * Started runs that threw end without an outcome while this process lives on: kafkajs runs the
   * commands again, and these runs are no crash. Best effort: with Kafka down the release may be
   * lost, which counts one start too many. Rethrows `error`.
   */
  async function released(taskIds: readonly string[], error: unknown, where: Record<string, unknown>): Promise<never> {
    await sendTaskEvents(taskIds.map((id) => ({ type: 'TaskReleased', task_id: id, at: Date.now() }))).catch(() => undefined);
    logger.warn({ err: error, ...where }, taskIds.length === 1 ? 'command run released: it runs again' : 'command runs released: they run again');
    throw error;
  }

  /** Runs a started command alone. */
  async function runStarted(handler: CommandHandler<WorkerCommand>, cmd: WorkerCommand, run: CommandRun): Promise<void> {
    try {
      await handler.run(cmd, run);
    } catch (error) {
      await released([cmd.task_id], error, { task_id: cmd.task_id, offset: run.at.offset, partition: run.at.partition });
    }
    finished.add(cmd.task_id);
  }

  /**
   * Starts commands decided to run (one TaskStarted request) and runs them: two or more as their
   * handler's group, each alone when there is one or the handler declines.
   */
  async function startRuns(handler: CommandHandler<WorkerCommand>, items: ReadonlyArray<{ cmd: WorkerCommand; run: CommandRun }>, partition: number): Promise<void> {
    const taskIds = items.map(({ cmd }) => cmd.task_id);
    await sendTaskEvents(taskIds.map((id) => ({ type: 'TaskStarted', task_id: id, at: Date.now() })));
    if (items.length === 1) logger.info({ task_id: taskIds[0], offset: items[0]!.run.at.offset, partition }, 'command run started');
    else logger.info({ tasks: taskIds, offsets: items.map(({ run }) => run.at.offset), partition }, 'command runs started together');
    let done: boolean;
    try {
      done = items.length > 1 && await handler.runGroup!(items);
    } catch (error) {
      return released(taskIds, error, { tasks: taskIds, partition });
    }
    if (done) for (const id of taskIds) finished.add(id);
    else for (const { cmd, run } of items) await runStarted(handler, cmd, run);
  }

  /**
   * decideStart on the accounts log read to its end (one offsets request: a disable or a grant
   * written before now counts) and on the task: the fold holds it while it is unfinished (with
   * every start acknowledged before this process started), the read model once it has finished.
   * A refusal for crashes is checked again on this partition read to its end: a release this
   * process wrote a moment ago may not be folded yet.
   */
  async function decide(cmd: WorkerCommand, partition: number, persist: Persist, syncAccounts: boolean): Promise<{ decision: StartDecision; crashes: number }> {
    if (syncAccounts) await accounts.syncToEnd();
    const replaced = producerFor(partition).replaced;
    if ((replacementsSeen.get(partition) ?? 0) !== replaced) {
      // A transaction of this partition failed to end: a commit may have landed after all (its
      // producer's successor settled it in ready()). The fold must show it before deciding.
      await tasks.syncToEnd([partition]);
      replacementsSeen.set(partition, replaced);
    }
    const task = await persist(`reading task ${cmd.task_id} from the tasks read model`, () => tasks.find(cmd.task_id));
    const now = () => {
      const known = tasks.state.get(cmd.task_id) ?? task;
      return { decision: decideStart(known, accounts.state.users.get(cmd.user_name), settings.MERIDIAN_MAX_COMMAND_STARTS), crashes: known?.open_runs ?? 0 };
    };
    const first = now();
    if (first.decision.kind !== 'fail' || !first.decision.deadLetter) return first;
    await tasks.syncToEnd([partition]);
    return now();
  }

  async function sendTaskEvents(events: readonly TaskEvent[]): Promise<void> {
    await taskEvents.send(progressProducer, events);
  }

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
          await consumer.stop();
          await Promise.allSettled([...transactional.values()].map((p) => p.disconnect()));
        })(),
      ]);
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
