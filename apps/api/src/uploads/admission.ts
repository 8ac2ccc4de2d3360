import type { Context } from 'koa';
import { assertTaskRoom, DomainError, type Task, type UnfinishedTasks, type UserRecord } from '@meridian/domain';
import { holdOpen } from '../http/hold-open.ts';
import type { PerUserSlots } from '../http/per-user-slots.ts';

/** Per-user caps on uploads: bodies received at once here, and unfinished tasks (from the tasks fold's counts). */
export type UploadCaps = {
  readonly inFlight: PerUserSlots;
  readonly queuedTasks: number;
  readonly unfinished: () => UnfinishedTasks;
  /** Unfinished tasks of a user from which their next upload waits for one to end (MERIDIAN_UPLOAD_BACKLOG_PER_USER), at most `waitMs`. */
  readonly backlog: {
    readonly perUser: number;
    readonly waitMs: number;
    readonly untilOneEnds: (userName: string, ms: number, signal: AbortSignal) => Promise<void>;
  };
};

/** What the upload routes' OpenAPI descriptions say of the per-user backlog. */
export const BACKLOG_DOC =
  'While the caller has MERIDIAN_UPLOAD_BACKLOG_PER_USER (default 8) unfinished tasks, a new upload waits, before its body is read, until one of them ends, at most MERIDIAN_UPLOAD_BACKLOG_WAIT_MS (default 10 s), then 429 with Retry-After: a producer faster than ingest gets slower answers, and what it has accepted stays fresh.';

/**
 * Runs an upload under its user's caps, checked before its body is read: a new task past the
 * unfinished-tasks cap (a retry of a task that exists is no new task), or one more body than the
 * in-flight cap, is refused with 429; a new task while the user's backlog is full waits for one of
 * their tasks to end (untilBacklogRoom). The slot is held until the upload is answered.
 */
export class UploadAdmission {
  readonly #caps: UploadCaps | undefined;
  readonly #find: (taskId: string) => Promise<Task | undefined>;

  /** Without caps every upload is admitted at once. */
  constructor(caps: UploadCaps | undefined, find: (taskId: string) => Promise<Task | undefined>) {
    this.#caps = caps;
    this.#find = find;
  }

  async run(ctx: Context, user: UserRecord, taskId: string, receive: () => Promise<void>, waitsInBacklog = true): Promise<void> {
    if (!this.#caps) return receive();
    const release = await this.#admit(ctx, this.#caps, user, taskId, waitsInBacklog);
    try {
      await receive();
    } finally {
      release();
    }
  }

  async #admit(ctx: Context, caps: UploadCaps, user: UserRecord, taskId: string, waitsInBacklog: boolean): Promise<() => void> {
    // A refusal here comes before the body is read: problemMiddleware closes the connection.
    // Only a user at the cap (or at the backlog) pays for the lookup of the task (memory, else
    // the read model), once: a retry of a task that exists is no new task.
    let found: Promise<boolean> | undefined;
    const exists = () =>
      (found ??= this.#find(taskId).then(
        (task) => task !== undefined,
        () => false,
      ));
    const unfinished = () => caps.unfinished().get(user.user_name) ?? 0;
    try {
      assertTaskRoom(caps.unfinished(), user.user_name, caps.queuedTasks);
    } catch (refusal) {
      if (!(await exists())) throw refusal;
    }
    // The slot first: the uploads one user has waiting for room are bounded by it too.
    const release = caps.inFlight.acquire(user.user_name);
    try {
      if (waitsInBacklog && unfinished() >= caps.backlog.perUser && !(await exists())) await untilBacklogRoom(ctx, caps.backlog, user.user_name, unfinished);
    } catch (refusal) {
      release();
      throw refusal;
    }
    return release;
  }
}

/**
 * Holds an upload while its user has `backlog.perUser` unfinished tasks, until one of them ends
 * (woken by the tasks fold), at most `backlog.waitMs`; then 429. Bounding what one user queues in
 * front of the ingest worker bounds the freshness of their uploads, and a user sending faster
 * than ingest drains feels it as slower 202s, not as a queue others wait behind. The request is
 * held open on purpose (holdOpen: the server's idle and request timeouts move on by the wait),
 * and a client that goes away ends the wait at once, giving its slot back.
 */
async function untilBacklogRoom(ctx: Context, backlog: UploadCaps['backlog'], userName: string, unfinished: () => number): Promise<void> {
  const deadline = Date.now() + backlog.waitMs;
  await holdOpen(ctx, backlog.waitMs, async (gone) => {
    while (unfinished() >= backlog.perUser) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new DomainError(
          'too_many',
          `you have ${unfinished()} unfinished tasks (MERIDIAN_UPLOAD_BACKLOG_PER_USER is ${backlog.perUser}) and none ended within ${backlog.waitMs} ms; retry later`,
        );
      }
      await backlog.untilOneEnds(userName, left, gone);
      // A 4xx no one reads, rather than an error: the slot is given back, nothing was accepted.
      if (gone.aborted) throw new DomainError('too_many', 'the client went away while its upload waited for room in its backlog');
    }
  });
}
