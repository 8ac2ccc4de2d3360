import type { ApiParts } from '../api-parts.ts';
import type { TaskReads } from './routes.ts';

export function taskReads({ services, settings, tasks, cursors, slots }: ApiParts): TaskReads {
  return {
    live: () => tasks.state,
    find: (taskId) => tasks.find(taskId),
    readModel: services.taskReadModel,
    syncToEnd: () => tasks.syncToEnd(),
    cursors,
    waits: {
      untilEnded: (taskId, ms, signal) => tasks.ends.wait(taskId, ms, signal),
      slots: slots.taskWaits,
      maxSeconds: settings.MERIDIAN_TASK_MAX_WAIT_SECONDS,
    },
  };
}
