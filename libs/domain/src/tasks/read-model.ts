import type { Task, TaskKind, TaskStatus } from './state.ts';

/** A task's state as the read model holds it, with the tasks-topic event it covers. */
export type TaskRow = { readonly task: Task; readonly partition: number; readonly offset: number };

/** Where a page of a user's tasks (newest first) continues: strictly older than this key. */
export type TaskListKey = { readonly created_at: number; readonly task_id: string };

export type TaskListQuery = {
  readonly user_name: string;
  readonly status?: TaskStatus;
  readonly kind?: TaskKind;
  readonly limit: number;
  readonly before?: TaskListKey;
};

/**
 * The durable tasks read model, fed from the tasks topic by the tasks projector.
 * It holds every task within retention; processes keep in memory only what is unfinished.
 */
export interface TaskReadModel {
  /** The task's latest projected state, whoever owns it (the caller checks visibility). */
  get(taskId: string): Promise<Task | undefined>;
  /** A user's tasks, newest first (created_at, then task_id, descending). */
  list(query: TaskListQuery): Promise<Task[]>;
  /** Which of these ids have a finished row: a command seen again for one of them is a duplicate. */
  finishedAmong(taskIds: readonly string[]): Promise<Set<string>>;
  /** Per tasks partition, the last offset the read model covers. */
  positions(): Promise<Map<number, number>>;
  /** The queued and running tasks (of these partitions, or all), each with the event its row covers. */
  unfinished(partitions?: readonly number[]): Promise<TaskRow[]>;
}

/** The projector's side: rows then positions, each write idempotent (a later offset wins). */
export interface TaskReadModelWriter {
  write(rows: readonly TaskRow[], positions: ReadonlyMap<number, number>): Promise<void>;
  /** Removes finished tasks last updated before `beforeMs`; resolves once the removal is queued. */
  expire(beforeMs: number): Promise<void>;
}

export const finishedStatus = (status: TaskStatus): boolean => status === 'succeeded' || status === 'failed';
