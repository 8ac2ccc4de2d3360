import { describe, expect, it } from 'vitest';
import { type DomainError } from '../errors.ts';
import type { MetricsUploadRequested } from '../uploads/events.ts';
import type { TaskEvent } from './events.ts';
import { initialTasks, type TasksState } from './state.ts';
import { applyTaskEventCounting, assertTaskRoom, type UnfinishedTasks } from './unfinished.ts';

const requested = (task_id: string, user_name: string): MetricsUploadRequested => ({
  type: 'MetricsUploadRequested',
  task_id,
  user_name,
  at: 1,
  metric_name: 'cpu',
  on_error: 'fail',
  source: 'json_body',
  payload: Buffer.from('{}'),
  staged_object: null,
  payload_bytes: 2,
  payload_sha256: Buffer.alloc(32, 1),
  idempotency_key: null,
});
const started = (task_id: string): TaskEvent => ({ type: 'TaskStarted', task_id, at: 2 });
const parsed = (task_id: string, partitions: number[]): TaskEvent => ({
  type: 'UploadParsed',
  task_id,
  rows_total: 1,
  points_accepted: 1,
  rows_rejected: 0,
  errors: [],
  partitions,
  metrics: ['cpu'],
  at: 3,
});
const projected = (task_id: string, partition: number): TaskEvent => ({ type: 'UploadSegmentProjected', task_id, partition, at: 4 });
const failed = (task_id: string): TaskEvent => ({ type: 'TaskFailed', task_id, reason: 'x', rows_total: 0, rows_rejected: 0, errors: [], at: 5 });

/** The count the map must hold: a scan of every task. */
function scanned(state: TasksState): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of state.values()) if (t.status === 'queued' || t.status === 'running') out.set(t.user_name, (out.get(t.user_name) ?? 0) + 1);
  return out;
}

describe('the unfinished-task counts beside the task fold', () => {
  it('counts queued and running tasks per user, and forgets a user with none', () => {
    const state = initialTasks();
    const counts: UnfinishedTasks = new Map();
    for (const e of [requested('a1', 'ada'), requested('a2', 'ada'), requested('b1', 'bob'), started('a1')]) applyTaskEventCounting(state, counts, e);
    expect(counts).toEqual(
      new Map([
        ['ada', 2],
        ['bob', 1],
      ]),
    );
    for (const e of [parsed('a1', [0]), projected('a1', 0), failed('a2'), failed('b1')]) applyTaskEventCounting(state, counts, e);
    expect(counts).toEqual(new Map());
  });

  it('agrees with a scan after any sequence, redeliveries and late events included', () => {
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const state = initialTasks();
    const counts: UnfinishedTasks = new Map();
    for (let i = 0; i < 5000; i++) {
      const id = `t${random(200)}`;
      const kinds = [() => requested(id, `u${random(5)}`), () => started(id), () => parsed(id, random(2) ? [0] : []), () => projected(id, 0), () => failed(id)];
      applyTaskEventCounting(state, counts, kinds[random(kinds.length)]!());
    }
    expect(counts).toEqual(scanned(state));
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });

  it('refuses a new task at the limit with too_many naming the setting', () => {
    const counts: UnfinishedTasks = new Map([['ada', 3]]);
    expect(() => assertTaskRoom(counts, 'ada', 4)).not.toThrow();
    expect(() => assertTaskRoom(counts, 'bob', 1)).not.toThrow();
    try {
      assertTaskRoom(counts, 'ada', 3);
      expect.unreachable();
    } catch (e) {
      expect((e as DomainError).code).toBe('too_many');
      expect((e as DomainError).message).toContain('MERIDIAN_MAX_QUEUED_TASKS_PER_USER');
    }
  });
});
