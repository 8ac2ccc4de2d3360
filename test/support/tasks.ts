import { call } from './api.ts';
import { waitFor } from './wait.ts';

export type TaskBody = {
  task_id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  progress: { rows_done: number; rows_total: number | null };
  result: { points_accepted: number; rows_rejected: number; metrics: string[] } | null;
  errors: Array<{ row: number; column: string; reason: string }>;
  reason: string | null;
};

/** Polls a task until it is succeeded or failed. */
export async function waitForTask(apiUrl: string, key: string, taskId: string, timeoutMs = 60_000): Promise<TaskBody> {
  return waitFor(`task ${taskId} to finish`, async () => {
    const res = await call(`${apiUrl}/api/v1/tasks/${taskId}`, key);
    const task = res.json as TaskBody;
    return task.status === 'succeeded' || task.status === 'failed' ? task : undefined;
  }, timeoutMs, 100);
}
