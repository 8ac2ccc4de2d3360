import { hasEnded, type Task } from '@meridian/domain';

/**
 * Requests waiting for a task to end (GET /api/v1/tasks/{id}?wait=N), woken from the tasks fold's
 * apply the moment the task becomes succeeded or failed: no polling, no delay beyond the fold's
 * own. Holds only what waits now: an entry goes when its task ends, its wait runs out or its
 * caller goes away. How many one user may hold is the caller's cap (the api's).
 */
export class TaskEndWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private closed = false;

  /** Requests waiting now, over all tasks. */
  get size(): number {
    let n = 0;
    for (const wakes of this.waiting.values()) n += wakes.size;
    return n;
  }

  /** Resolves when the task ends, after `ms`, or when `signal` aborts, whichever comes first; never rejects. */
  wait(taskId: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || signal?.aborted) return resolve();
      let wakes = this.waiting.get(taskId);
      if (!wakes) this.waiting.set(taskId, (wakes = new Set()));
      const own = wakes;
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        own.delete(wake);
        if (own.size === 0 && this.waiting.get(taskId) === own) this.waiting.delete(taskId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener('abort', wake, { once: true });
      own.add(wake);
    });
  }

  /** The fold calls this with the task each event touched: wakes its waiters once it has ended. */
  touched(task: Task | undefined): void {
    if (task === undefined || !hasEnded(task.status)) return;
    for (const wake of this.waiting.get(task.task_id) ?? []) wake();
  }

  /** The process stops: every waiter answers now with the task as it is, and later waits do not wait. */
  close(): void {
    this.closed = true;
    for (const wakes of [...this.waiting.values()]) for (const wake of wakes) wake();
  }
}
