import { decideStart, type LogWriter, type StartDecision, type TaskEvent } from '@meridian/domain';
import type { AccountsStore, TasksStore } from '@meridian/folds';
import type { Logger } from '@meridian/observability';
import type { CommandHandler, CommandRun, TaskLog, WorkerCommand } from './handlers.ts';
import type { OffsetCommits } from './offset-commits.ts';
import type { Persist } from '../persist.ts';
import type { EventLog, PartitionWriter } from '../event-log.ts';

export type RunnerOptions = {
  readonly log: Pick<EventLog, 'transactional'>;
  /** The transactional ids' prefix: the consumer group's name. */
  readonly groupId: string;
  readonly accounts: Pick<AccountsStore, 'syncToEnd' | 'state'>;
  readonly tasks: Pick<TasksStore, 'syncToEnd' | 'find' | 'state'>;
  readonly taskEvents: TaskLog;
  /** The group's plain offset commits, which a run claims its partition from before its transaction can commit its offset. */
  readonly offsets: Pick<OffsetCommits, 'claim'>;
  /** Writes the runs' brackets (TaskStarted, TaskReleased), outside any command's transaction. */
  readonly progressProducer: LogWriter;
  /** MERIDIAN_MAX_COMMAND_STARTS: starts of a command that died before it is refused. */
  readonly maxStarts: number;
  readonly logger: Logger;
};

/**
 * What is common to every command, whatever its handler: the decision to run, skip or refuse it
 * (decideStart, on the accounts log read to its end and on the task), the run's brackets in the
 * log, and one transactional producer per tasks partition, so a restarted worker fences its
 * predecessor's open transaction.
 */
export class CommandRunner {
  readonly #o: RunnerOptions;
  /** Tasks this process ended itself: right after a commit the fold may not show them yet. */
  readonly #finished = new RecentSet<string>(100_000);
  readonly #producers = new Map<number, PartitionWriter>();
  /** How many times each partition was assigned to this process (each join of the group that assigned it). */
  readonly #assignments = new Map<number, number>();
  /** Per partition, the assignment and the producer's replacements its fold was last read to the end for. */
  readonly #syncedFor = new Map<number, string>();

  constructor(options: RunnerOptions) {
    this.#o = options;
  }

  /** The partition's transactional producer; replaced by the log after a transaction that did not end cleanly. */
  producerFor(partition: number): PartitionWriter {
    let p = this.#producers.get(partition);
    if (!p) {
      p = this.#o.log.transactional(`${this.#o.groupId}-p${partition}`);
      this.#producers.set(partition, p);
    }
    return p;
  }

  /** The group assigned these partitions of the tasks topic to this process (after each join, before their batches). */
  assigned(partitions: readonly number[]): void {
    for (const p of partitions) this.#assignments.set(p, (this.#assignments.get(p) ?? 0) + 1);
  }

  /**
   * Whether to run, skip or refuse a command, and how many of its runs died. The same task can be
   * commanded twice (a retry with the same Idempotency-Key after a 503 whose send still landed):
   * it runs once. Finished tasks are in the fold or, once the read model covers them, in the read
   * model; ones this process finished itself are remembered here. The fold follows the log with
   * a lag, and another process may have just ended a task of the partition: so the partition is
   * read to its end before its first command after each assignment of it (one offsets request),
   * and a task its previous owner ended moments ago (its command read again, or commanded again by
   * a retried send) is seen as ended, not run twice. Likewise after the partition's producer was
   * replaced: a transaction that failed to end may have committed all the same (its successor
   * settled it in ready()).
   *
   * decideStart runs on the accounts log read to its end (one offsets request: a disable or a
   * grant written before now counts; skipped for the commands after a group's first, which share
   * its read) and on the task: the fold holds it while it is unfinished (with every start
   * acknowledged before this process started), the read model once it has finished. A refusal
   * for crashes is checked again on this partition read to its end: a release this process wrote
   * a moment ago may not be folded yet.
   */
  async decide(cmd: WorkerCommand, partition: number, persist: Persist, syncAccounts: boolean): Promise<{ decision: StartDecision; crashes: number }> {
    if (this.#finished.has(cmd.task_id)) return { decision: { kind: 'skip' }, crashes: 0 };
    const { accounts, tasks } = this.#o;
    if (syncAccounts) await accounts.syncToEnd();
    const syncFor = `${this.#assignments.get(partition) ?? 0}:${this.producerFor(partition).replaced}`;
    if (this.#syncedFor.get(partition) !== syncFor) {
      await tasks.syncToEnd([partition]);
      this.#syncedFor.set(partition, syncFor);
    }
    const task = await persist(`reading task ${cmd.task_id} from the tasks read model`, () => tasks.find(cmd.task_id));
    const now = () => {
      const known = tasks.state.get(cmd.task_id) ?? task;
      return { decision: decideStart(known, accounts.state.users.get(cmd.user_name), this.#o.maxStarts), crashes: known?.open_runs ?? 0 };
    };
    const first = now();
    if (first.decision.kind !== 'fail' || !first.decision.deadLetter) return first;
    await tasks.syncToEnd([partition]);
    return now();
  }

  /** Refuses a command decided to fail: its handler ends the task with the reason. */
  async refuse(handler: CommandHandler<WorkerCommand>, cmd: WorkerCommand, run: CommandRun, reason: string): Promise<void> {
    await this.#o.offsets.claim(run.at.partition, run.at.offset + 1);
    await handler.refuse(cmd, run, reason);
    this.#finished.add(cmd.task_id);
  }

  /**
   * Starts commands decided to run (one TaskStarted request) and runs them: two or more as their
   * handler's group, each alone when there is one or the handler declines.
   */
  async startRuns(handler: CommandHandler<WorkerCommand>, items: ReadonlyArray<{ cmd: WorkerCommand; run: CommandRun }>, partition: number): Promise<void> {
    const { logger } = this.#o;
    const taskIds = items.map(({ cmd }) => cmd.task_id);
    await this.#o.offsets.claim(partition, Math.max(...items.map(({ run }) => run.at.offset)) + 1);
    await this.#send(taskIds.map((id) => ({ type: 'TaskStarted', task_id: id, at: Date.now() })));
    if (items.length === 1) logger.info({ task_id: taskIds[0], offset: items[0]!.run.at.offset, partition }, 'command run started');
    else logger.info({ tasks: taskIds, offsets: items.map(({ run }) => run.at.offset), partition }, 'command runs started together');
    let done: boolean;
    try {
      done = items.length > 1 && (await handler.runGroup!(items));
    } catch (error) {
      return this.#released(taskIds, error, { tasks: taskIds, partition });
    }
    if (done) for (const id of taskIds) this.#finished.add(id);
    else for (const { cmd, run } of items) await this.#runAlone(handler, cmd, run);
  }

  /** Disconnects the partitions' producers (the consumer has stopped). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#producers.values()].map((p) => p.disconnect()));
  }

  async #runAlone(handler: CommandHandler<WorkerCommand>, cmd: WorkerCommand, run: CommandRun): Promise<void> {
    try {
      await handler.run(cmd, run);
    } catch (error) {
      await this.#released([cmd.task_id], error, { task_id: cmd.task_id, offset: run.at.offset, partition: run.at.partition });
    }
    this.#finished.add(cmd.task_id);
  }

  /**
   * Started runs that threw end without an outcome while this process lives on: kafkajs runs the
   * commands again, and these runs are no crash. Best effort: with Kafka down the release may be
   * lost, which counts one start too many. Rethrows `error`.
   */
  async #released(taskIds: readonly string[], error: unknown, where: Record<string, unknown>): Promise<never> {
    await this.#send(taskIds.map((id) => ({ type: 'TaskReleased', task_id: id, at: Date.now() }))).catch(() => undefined);
    this.#o.logger.warn({ err: error, ...where }, taskIds.length === 1 ? 'command run released: it runs again' : 'command runs released: they run again');
    throw error;
  }

  async #send(events: readonly TaskEvent[]): Promise<void> {
    await this.#o.taskEvents.send(this.#o.progressProducer, events);
  }
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
