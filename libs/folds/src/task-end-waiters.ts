import { hasEnded, type Task } from '@meridian/domain';

/**
 * Requests waiting for a task to end, woken from the tasks fold's apply the moment a task becomes
 * succeeded or failed: no polling, no delay beyond the fold's own. Two kinds: a long-poll
 * (GET /api/v1/tasks/{id}?wait=N) waits for one task; an upload held at its user's backlog
 * (MERIDIAN_UPLOAD_BACKLOG_PER_USER) waits for any task of that user. Holds only what waits now:
 * an entry goes when it is woken, its wait runs out or its caller goes away. How many one user may
 * hold is the caller's cap (the api's).
 */
export class TaskEndWaiters {
  private readonly byTask = new Map<string, Set<() => void>>();
  private readonly byUser = new Map<string, Set<() => void>>();
  private closed = false;

  /** Requests waiting now, over all tasks and users. */
  get size(): number {
    let n = 0;
    for (const wakes of this.byTask.values()) n += wakes.size;
    for (const wakes of this.byUser.values()) n += wakes.size;
    return n;
  }

  /** Resolves when the task ends, after `ms`, or when `signal` aborts, whichever comes first; never rejects. */
  wait(taskId: string, ms: number, signal?: AbortSignal): Promise<void> {
    return this.waitIn(this.byTask, taskId, ms, signal);
  }

  /** Resolves when any task of the user ends, after `ms`, or when `signal` aborts, whichever comes first; never rejects. */
  waitForUser(userName: string, ms: number, signal?: AbortSignal): Promise<void> {
    return this.waitIn(this.byUser, userName, ms, signal);
  }

  /** The fold calls this with the task each event touched: wakes its waiters once it has ended. */
  touched(task: Task | undefined): void {
    if (task === undefined || !hasEnded(task.status)) return;
    for (const wake of this.byTask.get(task.task_id) ?? []) wake();
    for (const wake of this.byUser.get(task.user_name) ?? []) wake();
  }

  /** The process stops: every waiter answers now with the task as it is, and later waits do not wait. */
  close(): void {
    this.closed = true;
    for (const waiting of [this.byTask, this.byUser]) for (const wakes of [...waiting.values()]) for (const wake of wakes) wake();
  }

  private waitIn(waiting: Map<string, Set<() => void>>, key: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || signal?.aborted) return resolve();
      let wakes = waiting.get(key);
      if (!wakes) waiting.set(key, (wakes = new Set()));
      const own = wakes;
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        own.delete(wake);
        if (own.size === 0 && waiting.get(key) === own) waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener('abort', wake, { once: true });
      own.add(wake);
    });
  }
}
