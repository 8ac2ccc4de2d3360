import { describe, expect, it } from 'vitest';
import { applyAccountEvent, applyTaskEvent, initialAccounts, initialTasks, type MetricsUploadRequested, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createLogger } from '@meridian/observability';
import { taskLog } from './handlers.ts';
import { CommandRunner } from './runner.ts';
import type { PartitionWriter } from '../event-log.ts';

const PARTITION = 1;

const command: MetricsUploadRequested = {
  type: 'MetricsUploadRequested',
  task_id: 'task-1',
  user_name: 'ada',
  at: 1,
  metric_name: null,
  on_error: 'skip',
  source: 'json_body',
  payload: null,
  staged_object: 'staging/task-1',
  payload_bytes: 10,
  payload_sha256: Buffer.alloc(32),
  idempotency_key: null,
};

/**
 * The tasks partition as another worker left it: the command, its start, and the outcome its
 * transaction committed a moment ago. The fold here has read the first `folded` of them; reading
 * the partition to its end (syncToEnd) applies the rest.
 */
function partitionEndedElsewhere(folded: number) {
  const log: TaskEvent[] = [
    command,
    { type: 'TaskStarted', task_id: command.task_id, at: 2 },
    { type: 'UploadParsed', task_id: command.task_id, at: 3, rows_total: 2, points_accepted: 2, rows_rejected: 0, errors: [], partitions: [0], metrics: ['m'] },
  ];
  const state = initialTasks();
  let applied = 0;
  const readTo = (n: number) => {
    for (; applied < n; applied++) applyTaskEvent(state, log[applied]!);
  };
  readTo(folded);
  const syncs: Array<readonly number[] | undefined> = [];
  const tasks = {
    state,
    syncToEnd: async (partitions?: readonly number[]) => {
      syncs.push(partitions);
      readTo(log.length);
    },
    // The read model has not caught up either: the task is only in the fold.
    find: async (taskId: string) => state.get(taskId),
  };
  return { tasks, syncs };
}

function runner(tasks: ReturnType<typeof partitionEndedElsewhere>['tasks']) {
  const accounts = {
    state: applyAccountEvent(initialAccounts(), {
      type: 'UserCreated',
      user_name: 'ada',
      is_admin: false,
      key_id: 'k',
      secret_sha256: Buffer.alloc(32),
      at: 0,
      actor: 'test',
    }),
    syncToEnd: async () => undefined,
  };
  const producer: PartitionWriter = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    replaced: 0,
    transaction: () => Promise.reject(new Error('no transaction in a decision')),
  };
  return new CommandRunner({
    log: { transactional: () => producer },
    groupId: 'g',
    accounts,
    tasks,
    taskEvents: taskLog('t', createEventCodec<TaskEvent>(), 'g'),
    progressProducer: { send: async () => [] },
    offsets: { claim: async () => undefined },
    maxStarts: 3,
    logger: createLogger({ name: 'test', level: 'silent' }),
  });
}

const persist = <T>(_what: string, attempt: () => Promise<T>) => attempt();

describe("the command runner's decision on a partition just assigned", () => {
  it('reads the partition to its end first, and skips a task its previous owner ended whose outcome the fold had not read', async () => {
    const { tasks, syncs } = partitionEndedElsewhere(2);
    const r = runner(tasks);
    r.assigned([0, PARTITION]);
    const { decision } = await r.decide(command, PARTITION, persist, true);
    expect(decision).toEqual({ kind: 'skip' });
    expect(syncs).toEqual([[PARTITION]]);
  });

  it('reads it once an assignment, and again after the next assignment of it', async () => {
    const { tasks, syncs } = partitionEndedElsewhere(3);
    const r = runner(tasks);
    r.assigned([PARTITION]);
    await r.decide(command, PARTITION, persist, true);
    await r.decide(command, PARTITION, persist, false);
    expect(syncs).toEqual([[PARTITION]]);
    r.assigned([0]);
    await r.decide(command, PARTITION, persist, true);
    expect(syncs).toHaveLength(1);
    r.assigned([0, PARTITION]);
    await r.decide(command, PARTITION, persist, true);
    expect(syncs).toEqual([[PARTITION], [PARTITION]]);
  });
});
