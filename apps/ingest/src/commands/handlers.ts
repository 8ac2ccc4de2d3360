import type {
  ConsumedPosition,
  FileDefinitionRequested,
  LogMessage,
  LogTransaction,
  LogWriter,
  MetricsUploadRequested,
  TaskEvent,
  TransactionalLog,
  UploadFailed,
} from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { eventMessage } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import { commandFailure, retry, RETRY_POLICIES, type RetryPolicy } from '@meridian/retry';
import { sleepWithHeartbeat } from '../persist.ts';

// What the command handlers (uploads, file definitions) share: how a handler is called, how it
// writes its task's events and ends a command in one transaction, and the one rule for a run
// that fails.

/** Where a command sits in the tasks topic. */
export type CommandPosition = ConsumedPosition;

/** The commands of the tasks topic this worker runs (a rebuild is run by whoever wrote it). */
export type WorkerCommand = MetricsUploadRequested | FileDefinitionRequested;

/** One handling of a command: where it sits, its partition's transactional producer, the consumer's heartbeat. */
export type CommandRun = {
  readonly at: CommandPosition;
  readonly producer: TransactionalLog;
  readonly heartbeat: () => Promise<void>;
  /** Sets the command aside on the dead-letter topic as it was read (key and value, byte-exact), with why. */
  readonly setAside: (reason: string) => Promise<void>;
};

/**
 * What the worker does with one type of command. Either way the task ends in the log together
 * with the command's offset (TaskLog.commitCommand, in one transaction), and the command's
 * staged bytes are removed after.
 */
export type CommandHandler<C extends WorkerCommand> = {
  /** Runs the command (runCommand: the one rule for failures); throws only Kafka's trouble, and the command is then redelivered. */
  run(cmd: C, run: CommandRun): Promise<void>;
  /** Fails the command's task without running it (refused at its start: the crash-loop breaker, a disabled owner). */
  refuse(cmd: C, run: CommandRun, reason: string): Promise<void>;
  /** Whether the command may run together with its neighbours (runGroup). */
  groups?(cmd: C): boolean;
  /**
   * Runs consecutive commands of one partition together (small uploads: one transaction).
   * True: each has ended in the log. False: none was written, and each is to run alone. Throws
   * Kafka's trouble, as run() does.
   */
  runGroup?(items: ReadonlyArray<{ readonly cmd: C; readonly run: CommandRun }>): Promise<boolean>;
};

/** The registry: the handler of each command type. */
export type CommandHandlers = { readonly [T in WorkerCommand['type']]: CommandHandler<Extract<WorkerCommand, { type: T }>> };

/** The handler of an event of the tasks topic, or undefined for the lifecycle events that pass by. */
export function handlerOf(handlers: CommandHandlers, type: string): CommandHandler<WorkerCommand> | undefined {
  return Object.hasOwn(handlers, type) ? handlers[type as WorkerCommand['type']] : undefined;
}

/** How a task ended in failure: its reason, the rows read and rejected, the first row errors. */
export type TaskFailure = Pick<UploadFailed, 'reason' | 'rows_total' | 'rows_rejected' | 'errors'>;

/** The event that ends a task in failure. */
export const taskFailed = (taskId: string, { reason, rows_total, rows_rejected, errors }: TaskFailure): TaskEvent => ({
  type: 'TaskFailed',
  task_id: taskId,
  reason,
  rows_total,
  rows_rejected,
  errors,
  at: Date.now(),
});

/** A failure before any row was read. */
export const failedUnread = (reason: string): TaskFailure => ({ reason, rows_total: 0, rows_rejected: 0, errors: [] });

/** The tasks topic as the handlers write it: a command's task events and its end. */
export type TaskLog = {
  /** A task event as a message of the tasks topic, keyed by its task. */
  message(event: TaskEvent): LogMessage;
  /** Sends task events, outside a transaction (started, progress: they show while the run goes on) or in one. */
  send(producer: LogWriter, events: readonly TaskEvent[]): Promise<void>;
  /** Moves the consumer group past the command, inside the transaction that writes its outcome. */
  commitCommand(tx: LogTransaction, at: CommandPosition): Promise<void>;
  /** Records the task's failure and moves past its command, atomically. */
  fail(producer: TransactionalLog, at: CommandPosition, taskId: string, failure: TaskFailure): Promise<void>;
};

export function taskLog(tasksTopic: string, codec: EventCodec<TaskEvent>, consumerGroupId: string): TaskLog {
  const message = (event: TaskEvent): LogMessage => eventMessage(codec, event.task_id, event);
  const send = async (producer: LogWriter, events: readonly TaskEvent[]) => {
    await producer.send({ topic: tasksTopic, acks: -1, messages: events.map(message) });
  };
  const commitCommand = (tx: LogTransaction, at: CommandPosition) => tx.commitConsumed(consumerGroupId, at);
  return {
    message,
    send,
    commitCommand,
    fail: (producer, at, taskId, failure) =>
      inTransaction(producer, async (tx) => {
        await send(tx, [taskFailed(taskId, failure)]);
        await commitCommand(tx, at);
      }),
  };
}

/** How a handler runs its command under the one rule for failures (runCommand). */
export type RunRule = {
  /** Runs of the command that stop on trouble waiting may cure, before its task fails (MERIDIAN_UPLOAD_ATTEMPTS). */
  readonly attempts: number;
  readonly logger: Logger;
  /** How the run's failure reads in its task's reason: `${what}: ${error}`. */
  readonly what: string;
  /** The backoff between runs. Default: RETRY_POLICIES.upload (tests: FAST_RETRY). */
  readonly policy?: RetryPolicy;
};

/**
 * Runs a command under the one rule for failures (commandFailure, @meridian/retry): Kafka's own
 * trouble is thrown, and the consumer redelivers the command; other trouble waiting may cure
 * (storage, network) is retried within this run, heartbeating while it waits; what is left (the
 * attempts spent, or a final error) sets the command aside in the dead-letter topic and fails
 * its task, and `giveUp` then cleans up after it. `attempt` must be safe to run again.
 */
export async function runCommand(
  taskId: string,
  run: CommandRun,
  tasks: TaskLog,
  rule: RunRule,
  attempt: () => Promise<unknown>,
  giveUp: () => Promise<void> = async () => undefined,
): Promise<void> {
  let attempts = 0;
  try {
    await retry(
      (n) => {
        attempts = n;
        return attempt();
      },
      {
        ...(rule.policy ?? RETRY_POLICIES.upload),
        attempts: rule.attempts,
        retriable: (error) => commandFailure(error) === 'retry',
        onRetry: (error, n, delay) => rule.logger.warn({ err: error, task_id: taskId, attempt: n, retry_in_ms: delay }, 'command run failed; retrying'),
        wait: (ms) => sleepWithHeartbeat(ms, run.heartbeat),
      },
    );
  } catch (error) {
    if (commandFailure(error) === 'redeliver') throw error;
    const message = (error as Error)?.message ?? String(error);
    rule.logger.error({ err: error, task_id: taskId, attempts }, 'command run failed; its task fails');
    await run.setAside(message);
    await tasks.fail(run.producer, run.at, taskId, failedUnread(`${rule.what}: ${message}`));
    await giveUp();
  }
}

/** Runs `work` in one transaction: committed when it returns, aborted when it throws. */
export async function inTransaction(producer: TransactionalLog, work: (tx: LogTransaction) => Promise<void>): Promise<void> {
  const tx = await producer.transaction();
  try {
    await work(tx);
    await tx.commit();
  } catch (error) {
    if (tx.isActive()) await tx.abort().catch(() => undefined);
    throw error;
  }
}
