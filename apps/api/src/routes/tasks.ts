import { z } from 'zod';
import { notFound, type Task, type TasksState, type UserRecord } from '@meridian/domain';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { taskView, taskViewSchema } from '../tasks/views.ts';

export type TaskReads = {
  readonly state: () => TasksState;
  /** Reads the tasks log to its end: a task just accepted by another api instance becomes visible. */
  readonly syncToEnd: () => Promise<void>;
};

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
      description: 'Answers at once after the 202 that returned the id. Only the task\'s owner and admins see it; anyone else gets 404, as for a task that does not exist.',
      tags: ['tasks'],
      auth: 'user',
      params: z.object({ task_id: z.string() }),
      responses: { 200: { description: 'The task', schema: taskViewSchema } },
      problems: ['not_found'],
      handler: async (ctx, { params, user }) => {
        // "Someone else's" and "unknown" take the same path (both read the log to its end, both
        // fail with the same problem), so neither the answer nor its time tells them apart.
        let task = visibleTask(tasks.state().get(params.task_id), user);
        if (!task && /^[0-9a-f-]{36}$/.test(params.task_id)) {
          await tasks.syncToEnd();
          task = visibleTask(tasks.state().get(params.task_id), user);
        }
        if (!task) throw notFound('no such task');
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
