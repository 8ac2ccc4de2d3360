import type { TaskCommand, TaskEvent } from './events.ts';
import { finishedStatus, type TaskRow } from './read-model.ts';
import { initialTasks, isTaskCommand, taskTransitions, type Task, type TasksState } from './state.ts';
import { applyTaskEventCounting, type UnfinishedTasks } from './unfinished.ts';

export type PositionedEvent = { readonly event: TaskEvent; readonly partition: number; readonly offset: number };

const isCommand = isTaskCommand;

/** Whether a command may repeat the task id of an earlier one: all but an upload sent without an Idempotency-Key. */
const mayRepeat = (e: TaskCommand): boolean => !((e.type === 'MetricsUploadRequested' || e.type === 'MetricsPushed') && e.idempotency_key === null);

/** Points of a task that are in the log and not yet projected: an upload parsed (or pushed) and still running. */
const awaitingProjection = (task: Task | undefined): number =>
  task !== undefined && task.status === 'running' && task.kind === 'metrics_upload' && task.result !== null ? (task.result.points_accepted ?? 0) : 0;

/**
 * The tasks fold bounded by what is live: queued and running tasks, and finished ones until the
 * read model covers the event that finished them (then `prune` lets them go: the read model
 * answers for them). Seeded from the read model's unfinished rows, then fed the log's tail.
 *
 * A command for a task not held here may repeat a task that finished before (retries under one
 * Idempotency-Key can land twice; the fold keeps the first): the caller asks the read model
 * which such ids are finished (`commandsToCheck`, then `apply` with the answer) and those
 * commands are ignored, as the full fold ignores a second command.
 */
export class LiveTasks {
  readonly state: TasksState = initialTasks();
  /** User → queued or running tasks, moved by the same events (the queued-tasks cap reads it). */
  readonly unfinished: UnfinishedTasks = new Map();
  /**
   * Points of every user's uploads that are in the log and not yet projected: how far the points
   * projector is behind what was accepted (pushes are refused past a bound of it).
   */
  pointsAwaitingProjection = 0;
  /** Task → offset of the last event applied to it: a re-read event at or below is skipped. */
  private readonly offsets = new Map<string, number>();
  /** Per partition, finished tasks still held, in the order (and at the offset) they finished. */
  private readonly leaving = new Map<number, Array<{ offset: number; taskId: string }>>();

  seed(rows: readonly TaskRow[]): void {
    for (const { task, partition, offset } of rows) {
      this.state.set(task.task_id, task);
      this.offsets.set(task.task_id, offset);
      if (finishedStatus(task.status)) this.leave(partition, offset, task.task_id);
      else this.unfinished.set(task.user_name, (this.unfinished.get(task.user_name) ?? 0) + 1);
      this.pointsAwaitingProjection += awaitingProjection(task);
    }
  }

  /**
   * Ids of commands among `events` for tasks not held here: ask the read model which are finished.
   * An upload without an Idempotency-Key is left out: its task id is a random UUID no other
   * command carries, so no finished task can share it (this saves a read-model query per upload
   * in every process that follows the tasks topic).
   */
  commandsToCheck(events: readonly PositionedEvent[]): string[] {
    const ids = new Set<string>();
    for (const { event } of events) if (isCommand(event) && mayRepeat(event) && !this.state.has(event.task_id)) ids.add(event.task_id);
    return [...ids];
  }

  /**
   * Applies one event of the log; `finishedElsewhere` holds ids the read model has finished.
   * Returns the task when the event changed it (the projector writes that task's row), else null.
   */
  apply({ event, partition, offset }: PositionedEvent, finishedElsewhere: ReadonlySet<string>): Task | null {
    const id = event.task_id;
    if (offset <= (this.offsets.get(id) ?? -1)) return null;
    const before = this.state.get(id);
    if (isCommand(event)) {
      if (before || finishedElsewhere.has(id)) return null;
    } else if (!before || !taskTransitions[event.type].from.includes(before.status)) {
      return null;
    }
    const awaitingBefore = awaitingProjection(before);
    applyTaskEventCounting(this.state, this.unfinished, event);
    const task = this.state.get(id)!;
    this.pointsAwaitingProjection += awaitingProjection(task) - awaitingBefore;
    this.offsets.set(id, offset);
    if (finishedStatus(task.status)) this.leave(partition, offset, id);
    return task;
  }

  /** Lets go of the finished tasks whose finishing event the read model covers; returns how many. */
  prune(covered: ReadonlyMap<number, number>): number {
    let n = 0;
    for (const [partition, queue] of this.leaving) {
      const upTo = covered.get(partition) ?? -1;
      let i = 0;
      while (i < queue.length && queue[i]!.offset <= upTo) {
        this.state.delete(queue[i]!.taskId);
        this.offsets.delete(queue[i]!.taskId);
        i++;
      }
      queue.splice(0, i);
      n += i;
    }
    return n;
  }

  private leave(partition: number, offset: number, taskId: string): void {
    let queue = this.leaving.get(partition);
    if (!queue) this.leaving.set(partition, (queue = []));
    queue.push({ offset, taskId });
  }
}
