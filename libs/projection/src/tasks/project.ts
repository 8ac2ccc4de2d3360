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

/** Projects one batch of `partition` ending at `lastOffset` (markers included); returns the rows written. */
export async function projectTaskBatch(p: TaskProjection, partition: number, events: readonly PositionedEvent[], lastOffset: number): Promise<number> {
  // A command for a task not held may repeat one that finished: the read model says which.
  const unknown = p.live.commandsToCheck(events);
  const finished =
    unknown.length === 0 ? new Set<string>() : await p.persist('asking the read model for finished tasks', () => p.readModel.finishedAmong(unknown));
  const changed = new Map<string, TaskRow>();
  for (const e of events) {
    const task = p.live.apply(e, finished);
    if (task) changed.set(task.task_id, { task, partition, offset: e.offset });
  }
  const position = new Map([[partition, lastOffset]]);
  await p.persist('writing tasks to the read model', () => p.writer.write([...changed.values()], position));
  p.live.prune(position);
  return changed.size;
}
