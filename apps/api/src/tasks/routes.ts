import { z } from 'zod';
import {
  DomainError,
  hasEnded,
  notFound,
  validationError,
  type Task,
  type TaskListKey,
  type TaskReadModel,
  type TasksState,
  type UserRecord,
} from '@meridian/domain';
import type { CursorSeal } from '../http/cursor-seal.ts';
import { holdOpen } from '../http/hold-open.ts';
import type { PerUserSlots } from '../http/per-user-slots.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { taskView, taskViewSchema } from './views.ts';

export type TaskReads = {
  /** Tasks in this process's memory: unfinished ones, and finished ones the read model may not show yet. */
  readonly live: () => TasksState;
  /** One task: from memory, else from the read model (TasksStore.find; 503 when the read model does not answer). */
  readonly find: (taskId: string) => Promise<Task | undefined>;
  /** Every task within retention, as the tasks projector has written it (for listing). */
  readonly readModel: Pick<TaskReadModel, 'list'>;
  /** Reads the tasks log to its end: a task just accepted by another api instance becomes visible. */
  readonly syncToEnd: () => Promise<void>;
  /** Long-polls: waiting for a task to end, bounded per user and in length. */
  readonly waits: TaskWaits;
  readonly cursors: CursorSeal;
};

type TaskWaits = {
  /** Resolves when the task ends, after `ms`, or when `signal` aborts (the tasks fold's waiters). */
  readonly untilEnded: (taskId: string, ms: number, signal: AbortSignal) => Promise<void>;
  /** Waits one user may hold at once on this instance (MERIDIAN_MAX_TASK_WAITERS_PER_USER). */
  readonly slots: PerUserSlots;
  /** Longest wait (MERIDIAN_TASK_MAX_WAIT_SECONDS); a longer one asked for is shortened to it. */
  readonly maxSeconds: number;
};

/** How long a long-poll waits: what it asked for, at most the cap (clamped, as an HTTP `Prefer: wait` is). */
export function waitMs(askedSeconds: number | undefined, maxSeconds: number): number {
  return Math.min(askedSeconds ?? 0, maxSeconds) * 1000;
}

/** The task when the caller may see it (its owner or an admin), else undefined, as for an unknown id. */
function visibleTask(task: Task | undefined, user: UserRecord): Task | undefined {
  return task !== undefined && (user.is_admin || task.user_name === user.user_name) ? task : undefined;
}

const unavailable = (cause: unknown) => new DomainError('unavailable', 'the tasks read model did not answer; retry later', [], { cause });

/** Newest first: created_at, then task_id, descending. */
const newestFirst = (a: Task, b: Task) => b.created_at - a.created_at || (a.task_id < b.task_id ? 1 : a.task_id > b.task_id ? -1 : 0);
const olderThan = (t: Task, key: TaskListKey) => t.created_at < key.created_at || (t.created_at === key.created_at && t.task_id < key.task_id);

const cursorContext = (userName: string, status: string | undefined, kind: string | undefined) => ['tasks', userName, status ?? null, kind ?? null];

export function taskRoutes(tasks: TaskReads): RouteDef[] {
  return [getTaskRoute(tasks), listTasksRoute(tasks)];
}

/** GET one task, with an optional long-poll until it ends. */
function getTaskRoute(tasks: TaskReads): RouteDef {
  const { find } = tasks;
  return defineRoute({
    method: 'GET',
    path: '/api/v1/tasks/{task_id}',
    operationId: 'getTask',
    summary: 'Follow a background task',
    description: [
      "Answers at once after the 202 that returned the id. Only the task's owner and admins see it; anyone else gets 404, as for a task that does not exist.",
      'With `wait=N` (a long-poll) the answer is held until the task has succeeded or failed, or N seconds have passed, whichever comes first, and is then the task as it is (200 either way): clients need not poll.',
      `N above the server's cap (MERIDIAN_TASK_MAX_WAIT_SECONDS, 30 by default) is shortened to the cap. Each user may hold a few waits at once per api instance (MERIDIAN_MAX_TASK_WAITERS_PER_USER, 16 by default); one more gets 429.`,
      'Finished tasks are kept for MERIDIAN_TASK_RETENTION_DAYS after their last change.',
    ].join(' '),
    tags: ['tasks'],
    auth: 'user',
    params: z.object({ task_id: z.string() }),
    query: z.object({
      wait: z.coerce
        .number()
        .int()
        .min(0)
        .optional()
        .describe(
          "Seconds to wait for the task to end before answering (a long-poll); 0 or absent answers at once. Shortened to the server's cap (MERIDIAN_TASK_MAX_WAIT_SECONDS).",
        ),
    }),
    responses: { 200: { description: 'The task: ended, or as it is when the wait ran out', schema: taskViewSchema } },
    problems: ['not_found', 'too_many', 'unavailable'],
    handler: async (ctx, { params, query, user }) => {
      // "Someone else's" and "unknown" take the same path (both ask the read model, read the
      // log to its end and ask again), so neither the answer nor its time tells them apart.
      // A task leaves this process's memory only once the read model has it, so after the
      // sync it is in one of the two when it exists at all.
      let task = visibleTask(tasks.live().get(params.task_id), user);
      if (!task && /^[0-9a-f-]{36}$/.test(params.task_id)) {
        task = visibleTask(await find(params.task_id), user);
        if (!task) {
          await tasks.syncToEnd();
          task = visibleTask(await find(params.task_id), user);
        }
      }
      if (!task) throw notFound('no such task');
      // Only a task the caller may see is waited on: the 404 above never waits.
      const ms = waitMs(query.wait, tasks.waits.maxSeconds);
      if (ms > 0 && !hasEnded(task.status)) {
        const id = task.task_id;
        const release = tasks.waits.slots.acquire(user.user_name);
        try {
          await holdOpen(ctx, ms, (signal) => tasks.waits.untilEnded(id, ms, signal));
        } finally {
          release();
        }
        // The task is woken from memory, but it may have left memory since: find reads the read
        // model then; if that does not answer, the task as it was before the wait.
        task = (await find(id).catch(() => undefined)) ?? task;
      }
      ctx.body = taskView(task);
    },
  });
}

/** GET the caller's tasks a page at a time: the read model's page merged with what memory holds ahead of it. */
function listTasksRoute(tasks: TaskReads): RouteDef {
  return defineRoute({
    method: 'GET',
    path: '/api/v1/tasks',
    operationId: 'listTasks',
    summary: "The caller's tasks, newest first",
    description: 'Pages: when more tasks follow, X-Next-Cursor holds an opaque cursor; pass it as `cursor` with the same filters for the next page.',
    tags: ['tasks'],
    auth: 'user',
    query: z.object({
      status: z.enum(['queued', 'running', 'succeeded', 'failed']).optional(),
      kind: z.enum(['metrics_upload', 'file_definition', 'points_rebuild', 'points_deletion']).optional(),
      limit: z.coerce.number().int().min(1).max(1000).default(100),
      cursor: z.string().max(4096).optional().describe('The opaque X-Next-Cursor of the previous page'),
    }),
    responses: {
      200: {
        description: 'Tasks',
        schema: z.object({ tasks: z.array(taskViewSchema) }),
        headers: { 'X-Next-Cursor': { description: 'Opaque: pass as cursor (same filters) for the next page; absent on the last page', schema: z.string() } },
      },
    },
    problems: ['unavailable'],
    handler: async (ctx, { query, user }) => {
      const context = cursorContext(user.user_name, query.status, query.kind);
      let before: TaskListKey | undefined;
      if (query.cursor !== undefined) {
        const opened = tasks.cursors.open(query.cursor, context);
        if (opened === null)
          throw validationError('invalid request: cursor not a cursor this service issued for this list', [
            { field: 'cursor', reason: 'not a cursor this service issued for this list' },
          ]);
        before = JSON.parse(opened) as TaskListKey;
      }
      const stored = await tasks.readModel
        .list({ user_name: user.user_name, status: query.status, kind: query.kind, limit: query.limit, before })
        .catch((e: unknown) => {
          throw unavailable(e);
        });
      // Memory is ahead of the read model for the tasks it holds (a task accepted a moment ago
      // is there first): its version replaces the stored one. When the stored page is full,
      // memory adds only tasks no older than its last row, so the next page misses nothing.
      const live = tasks.live();
      const floor = stored.length === query.limit ? stored[stored.length - 1] : undefined;
      const mine = (t: Task) =>
        t.user_name === user.user_name &&
        (query.status === undefined || t.status === query.status) &&
        (query.kind === undefined || t.kind === query.kind) &&
        (before === undefined || olderThan(t, before)) &&
        (floor === undefined || !olderThan(t, floor));
      const merged = new Map<string, Task>();
      for (const t of stored) {
        const held = live.get(t.task_id);
        if (held === undefined) merged.set(t.task_id, t);
        else if (mine(held)) merged.set(t.task_id, held);
      }
      for (const t of live.values()) if (mine(t)) merged.set(t.task_id, t);
      const page = [...merged.values()].sort(newestFirst).slice(0, query.limit);
      const last = page[page.length - 1];
      if (last && (floor !== undefined || merged.size > query.limit)) {
        ctx.set('X-Next-Cursor', tasks.cursors.seal(JSON.stringify({ created_at: last.created_at, task_id: last.task_id } satisfies TaskListKey), context));
      }
      ctx.body = { tasks: page.map(taskView) };
    },
  });
}
