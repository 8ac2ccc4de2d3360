import { applyTaskEventCounting, initialTasks, type TaskEvent, type TasksState, type UnfinishedTasks } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { FoldedTopic } from './folded-topic.ts';
import type { Platform } from './platform.ts';

/** Task state for one process: the tasks topic folded into memory and kept current. */
export class TasksStore extends FoldedTopic<TaskEvent, TasksState> {
  /** User → tasks queued or running, moved by the same events as the fold (the queued-tasks cap reads it). */
  readonly unfinished: UnfinishedTasks;

  constructor(platform: Platform, role: string) {
    const unfinished: UnfinishedTasks = new Map();
    super(platform, {
      topic: platform.topics.tasks,
      role: `${role}-tasks`,
      codec: createEventCodec<TaskEvent>(),
      initial: initialTasks,
      apply: (state, event) => applyTaskEventCounting(state, unfinished, event),
    });
    this.unfinished = unfinished;
  }
}
