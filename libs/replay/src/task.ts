import { randomUUID } from 'node:crypto';
import type { RebuildRequested, TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import type { ReplayDeps } from './deps.ts';
import type { RebuildPointsResult } from './replay.ts';

/**
 * A rebuild as a task of the tasks topic, like an upload: RebuildRequested queues it, TaskStarted
 * and TaskProgress (rows_done: points written so far) follow it, RebuildSucceeded or TaskFailed
 * end it. Every process folds the topic, so GET /api/v1/tasks/{id} shows it to admins.
 */
export type RebuildTask = {
  readonly taskId: string;
  started(): Promise<void>;
  /** Points written so far; sent at most every `everyMs`. */
  progress(points: number): void;
  succeeded(result: RebuildPointsResult): Promise<void>;
  failed(reason: string): Promise<void>;
};

const codec = createEventCodec<TaskEvent>();

export type RebuildTaskRequest = Omit<RebuildRequested, 'type' | 'task_id' | 'at'>;

/** Writes the command that queues a rebuild task; returns its id. */
export async function requestRebuildTask(
  deps: Pick<ReplayDeps, 'log' | 'topics'>,
  request: RebuildTaskRequest,
  taskId: string = randomUUID(),
): Promise<string> {
  await append(deps, taskId, [{ type: 'RebuildRequested', task_id: taskId, at: Date.now(), ...request }]);
  return taskId;
}

async function append(deps: Pick<ReplayDeps, 'log' | 'topics'>, taskId: string, events: TaskEvent[]): Promise<void> {
  await appendEvents(await deps.log.writer(), codec, deps.topics.tasks, taskId, events);
}

/** The task's lifecycle events for a rebuild run by this process. */
export function rebuildTask(deps: Pick<ReplayDeps, 'log' | 'topics'>, taskId: string, everyMs = 1000): RebuildTask {
  let last = 0;
  let pending: Promise<void> = Promise.resolve();
  let latest = 0;
  return {
    taskId,
    started: () => append(deps, taskId, [{ type: 'TaskStarted', task_id: taskId, at: Date.now() }]),
    progress(points) {
      latest = Math.max(latest, points);
      const now = Date.now();
      if (now - last < everyMs) return;
      last = now;
      // Progress is best effort and never holds the rebuild up; the events stay in order (one producer, one key).
      pending = pending.then(() => append(deps, taskId, [{ type: 'TaskProgress', task_id: taskId, rows_done: latest, at: now }])).catch(() => undefined);
    },
    async succeeded(r) {
      await pending;
      await append(deps, taskId, [
        {
          type: 'RebuildSucceeded',
          task_id: taskId,
          generation: r.generation,
          database: r.database,
          table: r.swap ? 'points' : r.table,
          events: r.stats.events,
          points: r.stats.points,
          verified: r.verification ? r.verification.ok : null,
          swapped: r.swap !== null,
          at: Date.now(),
        },
      ]);
    },
    async failed(reason) {
      await pending;
      await append(deps, taskId, [{ type: 'TaskFailed', task_id: taskId, reason, rows_total: 0, rows_rejected: 0, errors: [], at: Date.now() }]);
    },
  };
}
