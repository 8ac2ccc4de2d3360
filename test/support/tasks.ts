import { randomUUID } from 'node:crypto';
import { call, type RunningApi } from './api.ts';
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
  return waitFor(
    `task ${taskId} to finish`,
    async () => {
      const res = await call(`${apiUrl}/api/v1/tasks/${taskId}`, key);
      const task = res.json as TaskBody;
      return task.status === 'succeeded' || task.status === 'failed' ? task : undefined;
    },
    timeoutMs,
    100,
  );
}

/**
 * The raw messages of the tasks topic keyed by `taskId` (its command and its events), read from
 * the start with a consumer of its own, once there are at least `atLeast` of them.
 */
export async function taskMessages(api: RunningApi, topicPrefix: string, taskId: string, atLeast = 1): Promise<Buffer[]> {
  const { kafka, topics } = api.platform;
  const consumer = kafka.consumer({ groupId: `${topicPrefix}check-${randomUUID()}`, maxWaitTimeInMs: 100 });
  const found: Buffer[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: topics.tasks, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.key?.toString() === taskId && message.value) found.push(message.value);
      },
    });
    return await waitFor(`${atLeast} messages of ${taskId} on the tasks topic`, () => (found.length >= atLeast ? [...found] : undefined), 30_000, 100);
  } finally {
    await consumer.disconnect();
  }
}
