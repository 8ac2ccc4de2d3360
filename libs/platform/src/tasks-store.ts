import { applyTaskEvent, initialTasks, type TaskEvent, type TasksState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { FoldedTopic } from './folded-topic.ts';
import type { Platform } from './platform.ts';

/** Task state for one process: the tasks topic folded into memory and kept current. */
export class TasksStore extends FoldedTopic<TaskEvent, TasksState> {
  constructor(platform: Platform, role: string) {
    super(platform, { topic: platform.topics.tasks, role: `${role}-tasks`, codec: createEventCodec<TaskEvent>(), initial: initialTasks, apply: applyTaskEvent });
  }
}
