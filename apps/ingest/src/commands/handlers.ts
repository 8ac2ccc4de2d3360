import type { ConsumedPosition, FileDefinitionRequested, LogTransaction, MetricsUploadRequested, TransactionalLog } from '@meridian/domain';

// What the command handlers (uploads, file definitions) share: how a handler is called, and how
// it ends a command in one transaction.

/** Where a command sits in the tasks topic. */
export type CommandPosition = ConsumedPosition;

/** The commands of the tasks topic this worker runs (a rebuild is run by whoever wrote it). */
export type WorkerCommand = MetricsUploadRequested | FileDefinitionRequested;

/** One handling of a command: where it sits, its partition's transactional producer, the consumer's heartbeat, its bytes as read. */
export type CommandRun = {
  readonly at: CommandPosition;
  readonly producer: TransactionalLog;
  readonly heartbeat: () => Promise<void>;
  readonly value: Buffer | null;
};

/**
 * What the worker does with one type of command. Either way the task ends in the log together
 * with the command's offset (commitCommandOffset in one transaction), and the command's staged
 * bytes are removed after.
 */
export type CommandHandler<C extends WorkerCommand> = {
  /** Runs the command; throws only what running it again may cure (Kafka, storage unreachable): the command is then redelivered. */
  run(cmd: C, run: CommandRun): Promise<void>;
  /** Fails the command's task without running it (refused at its start: the crash-loop breaker, a disabled owner). */
  refuse(cmd: C, run: CommandRun, reason: string): Promise<void>;
};

/** The registry: the handler of each command type. */
export type CommandHandlers = { readonly [T in WorkerCommand['type']]: CommandHandler<Extract<WorkerCommand, { type: T }>> };

/** The handler of an event of the tasks topic, or undefined for the lifecycle events that pass by. */
export function handlerOf(handlers: CommandHandlers, type: string): CommandHandler<WorkerCommand> | undefined {
  return Object.hasOwn(handlers, type) ? handlers[type as WorkerCommand['type']] : undefined;
}

/** Moves the consumer group past the command, inside the transaction that writes its outcome. */
export async function commitCommandOffset(tx: LogTransaction, consumerGroupId: string, at: CommandPosition): Promise<void> {
  await tx.commitConsumed(consumerGroupId, at);
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
