import type { LiveTasks, PositionedEvent, TaskReadModel, TaskReadModelWriter, TaskRow } from '@meridian/domain';

/**
 * The tasks projection's one step, shared by the live tasks projector (apps/ingest) and
 * `meridian replay rebuild tasks`: a batch of one tasks partition folded (LiveTasks), the tasks
 * it changed written with the (partition, offset) of their last event, then the partition's
 * position; finished tasks then leave memory (the read model has them). Its batches come from
 * eventsAfter (../events-after.ts), as the files projection's do.
 */
export type TaskProjection = {
  readonly live: LiveTasks;
  readonly readModel: Pick<TaskReadModel, 'finishedAmong'>;
  readonly writer: Pick<TaskReadModelWriter, 'write'>;
  /** Runs an attempt until it succeeds (or the caller gives up by throwing). */
  readonly persist: <T>(what: string, attempt: () => Promise<T>) => Promise<T>;
};

/**
 * Tasks changed and positions reached by batches folded but not written yet: the live projector
 * folds each partition's batch of a fetch, then writes them all at once (one insert per table,
 * not one per partition).
 */
export class PendingTaskWrites {
  readonly rows = new Map<string, TaskRow>();
  readonly positions = new Map<number, number>();
}

/** Folds one batch of `partition` ending at `lastOffset` (markers included) into `pending`. */
export async function foldTaskBatch(
  p: Omit<TaskProjection, 'writer'>,
  pending: PendingTaskWrites,
  partition: number,
  events: readonly PositionedEvent[],
  lastOffset: number,
): Promise<void> {
  // A command for a task not held may repeat one that finished: the read model says which.
  const unknown = p.live.commandsToCheck(events);
  const finished =
    unknown.length === 0 ? new Set<string>() : await p.persist('asking the read model for finished tasks', () => p.readModel.finishedAmong(unknown));
  for (const e of events) {
    const task = p.live.apply(e, finished);
    // A task's events are all in one partition (keyed by its id): its last one here wins.
    if (task) pending.rows.set(task.task_id, { task, partition, offset: e.offset });
  }
  pending.positions.set(partition, lastOffset);
}

/** Writes the folded tasks, then the positions; finished tasks then leave memory. Returns the rows written. */
export async function writeTaskBatches(p: Omit<TaskProjection, 'readModel'>, pending: PendingTaskWrites): Promise<number> {
  if (pending.positions.size === 0) return 0;
  const rows = [...pending.rows.values()];
  const positions = new Map(pending.positions);
  await p.persist('writing tasks to the read model', () => p.writer.write(rows, positions));
  p.live.prune(positions);
  pending.rows.clear();
  pending.positions.clear();
  return rows.length;
}

/** Projects one batch of `partition` ending at `lastOffset` (markers included); returns the rows written. */
export async function projectTaskBatch(p: TaskProjection, partition: number, events: readonly PositionedEvent[], lastOffset: number): Promise<number> {
  const pending = new PendingTaskWrites();
  await foldTaskBatch(p, pending, partition, events, lastOffset);
  return writeTaskBatches(p, pending);
}
