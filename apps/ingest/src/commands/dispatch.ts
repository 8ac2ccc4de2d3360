import type { BatchPayload, ConsumedMessage, TaskEvent } from '@meridian/domain';
import { UndecodableEventError, type EventCodec } from '@meridian/events';
import type { Logger } from '@meridian/observability';
import { handlerOf, type CommandHandler, type CommandHandlers, type CommandRun, type WorkerCommand } from './handlers.ts';
import type { CommandRunner } from './runner.ts';
import { persistWhileRunning } from '../persist.ts';

export type DispatchDeps = {
  readonly runner: CommandRunner;
  readonly handlers: CommandHandlers;
  readonly codec: EventCodec<TaskEvent>;
  readonly logger: Logger;
  /** MERIDIAN_UPLOAD_GROUP_MAX: commands started together at most. */
  readonly groupMax: number;
  /** Sets a message aside in the dead-letter topic with its reason. */
  readonly setAside: (at: CommandRun['at'], message: ConsumedMessage, reason: string) => Promise<void>;
  /** False once the worker is stopping: a command waiting on a read gives up and stays for the next owner. */
  readonly running: () => boolean;
};

type Batch = Pick<BatchPayload, 'batch' | 'resolveOffset' | 'heartbeat' | 'isRunning' | 'isStale'>;

/**
 * Commands of one fetched batch that their handler may run together (small uploads: runGroup,
 * one transaction), gathered until one cannot join; and the offset dealt with, resolved only once
 * nothing before it is pending.
 */
class Gathering {
  #items: Array<{ cmd: WorkerCommand; run: CommandRun }> = [];
  #handler: CommandHandler<WorkerCommand> | undefined;
  #dealtWith: string | null = null;
  #beforeGroup: string | null = null;
  readonly #runner: CommandRunner;
  readonly #payload: Batch;

  constructor(runner: CommandRunner, payload: Batch) {
    this.#runner = runner;
    this.#payload = payload;
  }

  get size(): number {
    return this.#items.length;
  }

  holds(taskId: string): boolean {
    return this.#items.some((item) => item.cmd.task_id === taskId);
  }

  /** Whether a command of `handler` must wait for the group to start first (another handler, or the group full). */
  closedTo(handler: CommandHandler<WorkerCommand>, max: number): boolean {
    return this.#items.length > 0 && (handler !== this.#handler || this.#items.length >= max);
  }

  join(handler: CommandHandler<WorkerCommand>, cmd: WorkerCommand, run: CommandRun, offset: string): void {
    if (this.#items.length === 0) this.#beforeGroup = this.#dealtWith;
    this.#items.push({ cmd, run });
    this.#handler = handler;
    this.#dealtWith = offset;
  }

  dealtWith(offset: string): void {
    this.#dealtWith = offset;
  }

  /** Starts the group gathered so far, then resolves the offset dealt with. */
  async settle(): Promise<void> {
    if (this.#items.length > 0) {
      const [items, handler] = [this.#items, this.#handler!];
      this.#items = [];
      await this.#runner.startRuns(handler, items, this.#payload.batch.partition);
    }
    if (this.#dealtWith !== null) this.#payload.resolveOffset(this.#dealtWith);
    await this.#payload.heartbeat();
  }

  /** Stopping, or the partition taken: a group not started yet is left to the next owner, unresolved. */
  abandon(): void {
    if (this.#items.length === 0) return;
    this.#items = [];
    this.#dealtWith = this.#beforeGroup;
  }
}

/**
 * Hands each command of a batch of the tasks topic to its handler: decided (run, skip, refuse),
 * gathered with its neighbours when they may run together and none of whose runs died, or run
 * alone. Events without a handler (the lifecycle beside the commands) pass by; one that does not
 * decode is set aside.
 */
export async function dispatchBatch(deps: DispatchDeps, payload: Batch): Promise<void> {
  const { batch, heartbeat, isRunning, isStale } = payload;
  const { topic, partition } = batch;
  const { runner, logger } = deps;
  const producer = runner.producerFor(partition);
  const gathering = new Gathering(runner, payload);
  const ours = () => isRunning() && !isStale();
  for (const message of batch.messages) {
    if (!ours()) break;
    const at = { topic, partition, offset: Number(message.offset) };
    const setAside = (reason: string) => deps.setAside(at, message, reason);
    let event: TaskEvent;
    try {
      event = deps.codec.decode(message.value ?? Buffer.alloc(0));
    } catch (error) {
      if (!(error instanceof UndecodableEventError)) throw error;
      await gathering.settle();
      await setAside(error.message);
      gathering.dealtWith(message.offset);
      continue;
    }
    const handler = handlerOf(deps.handlers, event.type);
    const cmd = event as WorkerCommand;
    if (handler === undefined) {
      gathering.dealtWith(message.offset);
      continue;
    }
    // A second command for a task of the group (a retried send) waits for the group's end, then finds it finished.
    if (gathering.holds(cmd.task_id)) await gathering.settle();
    await producer.connect(); // fences a predecessor's open transaction and settles it first
    const run: CommandRun = { at, producer, heartbeat, setAside };
    // Thrown Stopping leaves the command unconsumed, for the next owner.
    const persist = persistWhileRunning(logger, { isRunning: deps.running, heartbeat });
    // While a group gathers, the commands after its first share the accounts log read made for it (no I/O between them).
    const { decision, crashes } = await runner.decide(cmd, partition, persist, gathering.size === 0);
    if (decision.kind === 'skip') {
      logger.info({ task_id: cmd.task_id, offset: at.offset }, 'command for a finished task skipped');
      gathering.dealtWith(message.offset);
      continue;
    }
    // Only commands none of whose runs died go together: one that may crash the process runs
    // alone, so it cannot take its neighbours' starts with it again.
    const joins = decision.kind === 'run' && crashes === 0 && handler.runGroup !== undefined && handler.groups?.(cmd) === true;
    if (joins && gathering.closedTo(handler, deps.groupMax)) await gathering.settle();
    if (joins) {
      gathering.join(handler, cmd, run, message.offset);
      continue;
    }
    await gathering.settle();
    if (decision.kind === 'fail') {
      logger.warn({ task_id: cmd.task_id, offset: at.offset, reason: decision.reason }, 'command refused');
      if (decision.deadLetter) await setAside(decision.reason);
      await runner.refuse(handler, cmd, run, decision.reason);
    } else {
      await runner.startRuns(handler, [{ cmd, run }], partition);
    }
    gathering.dealtWith(message.offset);
  }
  if (!ours()) gathering.abandon();
  await gathering.settle();
}
