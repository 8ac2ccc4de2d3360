import { setTimeout as sleep } from 'node:timers/promises';
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

export const getTask = (client: ApiClient, taskId: string) =>
  client.json<TaskView>(`/api/v1/tasks/${encodeURIComponent(taskId)}`, { idempotent: true });

/** Polls a task every `pollMs` until it has succeeded or failed; `seen` gets every state. */
export async function waitForTask(client: ApiClient, taskId: string, pollMs: number, seen: (task: TaskView) => void): Promise<TaskView> {
  for (;;) {
    const task = await getTask(client, taskId);
    seen(task);
    if (task.status === 'succeeded' || task.status === 'failed') return task;
    await sleep(pollMs);
  }
}

/** A task's row errors as lines a person reads: `row 3, value: not a number`. */
export function rowErrorLines(task: Pick<TaskView, 'errors'>): string[] {
  return task.errors.map((e) => e.row === -1 ? `  … ${e.reason}` : `  ${e.row === 0 ? 'upload' : `row ${e.row}`}${e.column ? `, ${e.column}` : ''}: ${e.reason}`);
}
