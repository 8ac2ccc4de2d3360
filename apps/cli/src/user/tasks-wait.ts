import type { ApiClient } from './api-client.ts';

/** GET /api/v1/tasks/{id}, as the api shows it (apps/api/src/tasks/views.ts). */
export type TaskView = {
  task_id: string;
  kind: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  created_at: string;
  updated_at: string;
  progress: { rows_done: number; rows_total: number | null };
  result: Record<string, unknown> | null;
  errors: Array<{ row: number; column: string; reason: string }>;
  reason: string | null;
};

export const getTask = (client: ApiClient, taskId: string, waitSeconds?: number) =>
  client.json<TaskView>(`/api/v1/tasks/${encodeURIComponent(taskId)}`, {
    idempotent: true,
    query: { wait: waitSeconds === undefined ? undefined : String(waitSeconds) },
  });

/**
 * Follows a task until it has succeeded or failed, with the api's long-poll: each request is
 * answered when the task ends or after `waitSeconds` (shortened to the api's cap), so the end
 * is seen at once and `seen` gets the task at least that often (the progress line).
 */
export async function waitForTask(client: ApiClient, taskId: string, waitSeconds: number, seen: (task: TaskView) => void): Promise<TaskView> {
  for (;;) {
    const task = await getTask(client, taskId, waitSeconds);
    seen(task);
    if (task.status === 'succeeded' || task.status === 'failed') return task;
  }
}

/** A task's row errors as lines a person reads: `row 3, value: not a number`. */
export function rowErrorLines(task: Pick<TaskView, 'errors'>): string[] {
  return task.errors.map((e) =>
    e.row === -1 ? `  … ${e.reason}` : `  ${e.row === 0 ? 'upload' : `row ${e.row}`}${e.column ? `, ${e.column}` : ''}: ${e.reason}`,
  );
}
