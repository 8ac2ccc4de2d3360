import { applyTaskEventCounting, initialTasks, type TaskEvent, type TasksState, type UnfinishedTasks } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { FoldedTopic } from './folded-topic.ts';
import type { Platform } from './platform.ts';
import { TaskEndWaiters } from './task-end-waiters.ts';

/** Task state for one process: the tasks topic folded into memory and kept current. */
export class TasksStore extends FoldedTopic<TaskEvent, TasksState> {
  /** User → tasks queued or running, moved by the same events as the fold (the queued-tasks cap reads it). */
  readonly unfinished: UnfinishedTasks;
  /** Requests waiting for a task to end (long-poll), woken as the fold applies the event that ends it. */
  readonly ends: TaskEndWaiters;

  constructor(platform: Platform, role: string) {
    const unfinished: UnfinishedTasks = new Map();
    const ends = new TaskEndWaiters();
    super(platform, {
      topic: platform.topics.tasks,
      role: `${role}-tasks`,
      codec: createEventCodec<TaskEvent>(),
      initial: initialTasks,
      apply: (state, event) => {
        applyTaskEventCounting(state, unfinished, event);
        ends.touched(state.get(event.task_id));
      },
    });
    this.unfinished = unfinished;
    this.ends = ends;
  }
}
