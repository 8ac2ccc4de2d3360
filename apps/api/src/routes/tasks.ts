import { z } from 'zod';
import { hasEnded, notFound, type Task, type TasksState, type UserRecord } from '@meridian/domain';
import { holdOpen } from '../http/hold-open.ts';
import type { PerUserSlots } from '../http/per-user-slots.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { taskView, taskViewSchema } from '../tasks/views.ts';

export type TaskReads = {
  readonly state: () => TasksState;
  /** Reads the tasks log to its end: a task just accepted by another api instance becomes visible. */
  readonly syncToEnd: () => Promise<void>;
  /** Long-polls: waiting for a task to end, bounded per user and in length. */
  readonly waits: TaskWaits;
};

export type TaskWaits = {
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

export function taskRoutes(tasks: TaskReads): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/api/v1/tasks/{task_id}',
      operationId: 'getTask',
      summary: 'Follow a background task',
      description: [
        'Answers at once after the 202 that returned the id. Only the task\'s owner and admins see it; anyone else gets 404, as for a task that does not exist.',
        'With `wait=N` (a long-poll) the answer is held until the task has succeeded or failed, or N seconds have passed, whichever comes first, and is then the task as it is (200 either way): clients need not poll.',
        `N above the server's cap (MERIDIAN_TASK_MAX_WAIT_SECONDS, 30 by default) is shortened to the cap. Each user may hold a few waits at once per api instance (MERIDIAN_MAX_TASK_WAITERS_PER_USER, 16 by default); one more gets 429.`,
      ].join(' '),
      tags: ['tasks'],
      auth: 'user',
      params: z.object({ task_id: z.string() }),
      query: z.object({
        wait: z.coerce.number().int().min(0).optional()
          .describe('Seconds to wait for the task to end before answering (a long-poll); 0 or absent answers at once. Shortened to the server\'s cap (MERIDIAN_TASK_MAX_WAIT_SECONDS).'),
      }),
      responses: { 200: { description: 'The task: ended, or as it is when the wait ran out', schema: taskViewSchema } },
      problems: ['not_found', 'too_many'],
      handler: async (ctx, { params, query, user }) => {
        // "Someone else's" and "unknown" take the same path (both read the log to its end, both
        // fail with the same problem), so neither the answer nor its time tells them apart.
        let task = visibleTask(tasks.state().get(params.task_id), user);
        if (!task && /^[0-9a-f-]{36}$/.test(params.task_id)) {
          await tasks.syncToEnd();
          task = visibleTask(tasks.state().get(params.task_id), user);
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
          task = tasks.state().get(id) ?? task;
        }
        ctx.body = taskView(task);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/tasks',
      operationId: 'listTasks',
      summary: 'The caller\'s tasks, newest first',
      tags: ['tasks'],
      auth: 'user',
      query: z.object({
        status: z.enum(['queued', 'running', 'succeeded', 'failed']).optional(),
        limit: z.coerce.number().int().min(1).max(1000).default(100),
      }),
      responses: { 200: { description: 'Tasks', schema: z.object({ tasks: z.array(taskViewSchema) }) } },
      handler: (ctx, { query, user }) => {
        const mine = [...tasks.state().values()]
          .filter((t) => t.user_name === user.user_name && (query.status === undefined || t.status === query.status))
          .sort((a, b) => b.created_at - a.created_at || b.task_id.localeCompare(a.task_id))
          .slice(0, query.limit);
        ctx.body = { tasks: mine.map(taskView) };
      },
    }),
  ];
}
