import { DomainError } from '../errors.ts';
import type { TaskEvent } from './events.ts';
import { applyTaskEvent, type TaskStatus, type TasksState } from './state.ts';

/**
 * User → how many of their tasks are unfinished (queued or running): what the cap on queued
 * tasks counts. Kept beside the tasks fold and moved by the same events, so a check costs one
 * map read, not a scan of every task.
 */
export type UnfinishedTasks = Map<string, number>;

const unfinished = (status: TaskStatus | undefined) => status === 'queued' || status === 'running';

/** Whether a task has ended: succeeded or failed, and no event moves it again. */
export const hasEnded = (status: TaskStatus): boolean => status === 'succeeded' || status === 'failed';

/** Applies one event to the fold and moves the user's count when the task starts or stops being unfinished. */
export function applyTaskEventCounting(state: TasksState, counts: UnfinishedTasks, event: TaskEvent): TasksState {
  const before = unfinished(state.get(event.task_id)?.status);
  applyTaskEvent(state, event);
  const task = state.get(event.task_id);
  const after = unfinished(task?.status);
  if (task && before !== after) {
    const n = (counts.get(task.user_name) ?? 0) + (after ? 1 : -1);
    if (n > 0) counts.set(task.user_name, n);
    else counts.delete(task.user_name);
  }
  return state;
}

/** Refuses a new task for a user who has `limit` unfinished ones already (429: they drain on their own). */
export function assertTaskRoom(counts: UnfinishedTasks, userName: string, limit: number): void {
  const now = counts.get(userName) ?? 0;
  if (now >= limit) {
    throw new DomainError('too_many', `at most ${limit} unfinished tasks per user (MERIDIAN_MAX_QUEUED_TASKS_PER_USER); retry when some have finished`, [
      { field: 'MERIDIAN_MAX_QUEUED_TASKS_PER_USER', reason: `${now} of ${limit} tasks queued or running` },
    ]);
  }
}
