import { describe, expect, it } from 'vitest';
import type { MetricsUploadRequested } from '../uploads/events.ts';
import type { TaskEvent } from './events.ts';
import { applyTaskEvent, foldTasks, taskTransitions, type TaskStatus } from './state.ts';

const requested: MetricsUploadRequested = {
  type: 'MetricsUploadRequested',
  task_id: 't1',
  user_name: 'ada',
  at: 1000,
  metric_name: 'cpu',
  on_error: 'fail',
  source: 'json_body',
  payload: Buffer.from('{}'),
  staged_object: null,
  payload_bytes: 2,
  payload_sha256: Buffer.alloc(32, 1),
  idempotency_key: 'k1',
};
const started: TaskEvent = { type: 'TaskStarted', task_id: 't1', at: 1100 };
const released: TaskEvent = { type: 'TaskReleased', task_id: 't1', at: 1150 };
const progress = (rows: number, at: number): TaskEvent => ({ type: 'TaskProgress', task_id: 't1', rows_done: rows, at });
const parsed = (partitions: number[]): TaskEvent => ({
  type: 'UploadParsed',
  task_id: 't1',
  rows_total: 10,
  points_accepted: 9,
  rows_rejected: 1,
  errors: [{ row: 3, column: 'value', reason: 'not a number' }],
  partitions,
  metrics: ['cpu'],
  at: 1200,
});
const projected = (partition: number, at = 1300): TaskEvent => ({ type: 'UploadSegmentProjected', task_id: 't1', partition, at });
const failed: TaskEvent = { type: 'TaskFailed', task_id: 't1', reason: '1 invalid rows', rows_total: 10, rows_rejected: 1, errors: [], at: 1250 };

const fileSucceeded: TaskEvent = { type: 'FileDefinitionSucceeded', task_id: 't1', file_id: 'f1', size: 5, sha256: Buffer.alloc(32, 2), at: 1500 };

const statusAfter = (events: TaskEvent[]) => foldTasks(events).get('t1')?.status;

describe('the task fold', () => {
  it('a command queues a task with its owner and times', () => {
    const task = foldTasks([requested]).get('t1')!;
    expect(task).toMatchObject({
      status: 'queued',
      user_name: 'ada',
      created_at: 1000,
      updated_at: 1000,
      rows_done: 0,
      rows_total: null,
      idempotency_key: 'k1',
    });
  });

  it('queued → running → succeeded only once every partition is projected', () => {
    expect(statusAfter([requested, started])).toBe('running');
    expect(statusAfter([requested, started, progress(5, 1150)])).toBe('running');
    expect(statusAfter([requested, started, parsed([0, 2])])).toBe('running');
    expect(statusAfter([requested, started, parsed([0, 2]), projected(0)])).toBe('running');
    const done = foldTasks([requested, started, parsed([0, 2]), projected(0), projected(2, 1400)]).get('t1')!;
    expect(done).toMatchObject({
      status: 'succeeded',
      rows_done: 10,
      rows_total: 10,
      updated_at: 1400,
      result: { points_accepted: 9, rows_rejected: 1, metrics: ['cpu'] },
    });
    expect(done.errors).toEqual([{ row: 3, column: 'value', reason: 'not a number' }]);
  });

  it('an upload with no points succeeds as soon as it is parsed', () => {
    expect(statusAfter([requested, started, parsed([])])).toBe('succeeded');
  });

  it('a push arrives decided: running until its partitions are projected, then as an upload that was parsed', () => {
    const pushed: TaskEvent = {
      type: 'MetricsPushed',
      task_id: 't1',
      user_name: 'ada',
      at: 1000,
      metric_name: 'cpu',
      on_error: 'skip',
      source: 'json_body',
      payload_bytes: 2,
      payload_sha256: Buffer.alloc(32, 1),
      idempotency_key: 'k1',
      rows_total: 10,
      points_accepted: 9,
      rows_rejected: 1,
      errors: [{ row: 3, column: 'value', reason: 'not a number' }],
      partitions: [0, 2],
      metrics: ['cpu'],
    };
    const running = foldTasks([pushed]).get('t1')!;
    expect(running).toEqual({
      task_id: 't1',
      kind: 'metrics_upload',
      user_name: 'ada',
      status: 'running',
      created_at: 1000,
      updated_at: 1000,
      rows_done: 10,
      rows_total: 10,
      result: { points_accepted: 9, rows_rejected: 1, metrics: ['cpu'] },
      errors: [{ row: 3, column: 'value', reason: 'not a number' }],
      reason: null,
      pending_partitions: [0, 2],
      open_runs: 0,
      idempotency_key: 'k1',
      payload_sha256: Buffer.alloc(32, 1).toString('hex'),
      upload_request: JSON.stringify(['json_body', 'cpu', 'skip']),
      payload_bytes: 2,
      file_id: null,
    });
    expect(foldTasks([pushed, projected(0), projected(2)]).get('t1')!.status).toBe('succeeded');
    expect(foldTasks([{ ...pushed, partitions: [] }]).get('t1')!.status).toBe('succeeded');
    // A second push under the task's id (a retry whose first attempt landed) changes nothing.
    expect(foldTasks([pushed, { ...pushed, rows_total: 99, partitions: [] }]).get('t1')).toEqual(running);
  });

  it('fails from queued or running, and nothing moves a finished task', () => {
    expect(statusAfter([requested, failed])).toBe('failed');
    expect(statusAfter([requested, started, failed, parsed([]), progress(99, 2000)])).toBe('failed');
    expect(statusAfter([requested, started, parsed([]), failed, projected(1)])).toBe('succeeded');
  });

  it('a failure found after parsing (a batch the projector could not store) keeps the parsed counts and row errors', () => {
    const late: TaskEvent = {
      type: 'TaskFailed',
      task_id: 't1',
      reason: 'a point batch could not be stored',
      rows_total: 0,
      rows_rejected: 0,
      errors: [],
      at: 1350,
    };
    const task = foldTasks([requested, started, parsed([0, 2]), projected(0), late, projected(2, 1400)]).get('t1')!;
    expect(task).toMatchObject({ status: 'failed', reason: 'a point batch could not be stored', rows_total: 10, rows_done: 10 });
    expect(task.errors).toEqual([{ row: 3, column: 'value', reason: 'not a number' }]);
  });

  // A repeated TaskStarted counts (each is a run: see decide.unit.test.ts); a re-read of the log
  // applies no event twice (TopicFollower skips offsets it has applied).
  it('is idempotent: a repeated command, progress or projection changes nothing', () => {
    const once = [requested, started, progress(5, 1150), parsed([1]), projected(1)];
    const twice = [requested, requested, started, progress(5, 1150), progress(3, 1160), parsed([1]), projected(1), projected(1)];
    const a = foldTasks(once).get('t1')!;
    const b = foldTasks(twice).get('t1')!;
    expect({ ...b, updated_at: 0 }).toEqual({ ...a, updated_at: 0 });
  });

  it('ignores events of unknown tasks', () => {
    expect(foldTasks([started, parsed([1])]).size).toBe(0);
  });

  it('follows the transition table for every event from every status', () => {
    const reach: Record<TaskStatus, TaskEvent[]> = {
      queued: [requested],
      running: [requested, started],
      succeeded: [requested, parsed([])],
      failed: [requested, failed],
    };
    const samples: Record<keyof typeof taskTransitions, TaskEvent> = {
      TaskStarted: started,
      TaskReleased: released,
      TaskProgress: progress(1, 5000),
      UploadParsed: parsed([4]),
      UploadSegmentProjected: projected(4),
      TaskFailed: failed,
      FileDefinitionSucceeded: fileSucceeded,
      RebuildSucceeded: {
        type: 'RebuildSucceeded',
        task_id: 't1',
        generation: 2,
        database: 'd',
        table: 'points_g2',
        events: 1,
        points: 1,
        verified: true,
        swapped: false,
        at: 5000,
      },
    };
    // Where each allowed event leads from these histories (a seal without a parse waits).
    const allowedOutcome: Record<keyof typeof taskTransitions, TaskStatus> = {
      TaskStarted: 'running',
      TaskReleased: 'running',
      TaskProgress: 'running',
      UploadParsed: 'running',
      UploadSegmentProjected: 'running',
      TaskFailed: 'failed',
      FileDefinitionSucceeded: 'succeeded',
      RebuildSucceeded: 'succeeded',
    };
    for (const [from, history] of Object.entries(reach) as Array<[TaskStatus, TaskEvent[]]>) {
      for (const [type, rule] of Object.entries(taskTransitions) as Array<
        [keyof typeof taskTransitions, (typeof taskTransitions)[keyof typeof taskTransitions]]
      >) {
        const state = foldTasks(history);
        applyTaskEvent(state, samples[type]);
        const after = state.get('t1')!.status;
        expect(after, `${type} from ${from}`).toBe(rule.from.includes(from) ? allowedOutcome[type] : from);
      }
    }
  });
});

describe('file definition tasks', () => {
  const defineFile: TaskEvent = {
    type: 'FileDefinitionRequested',
    task_id: 'f-t1',
    file_id: 'f1',
    user_name: 'ada',
    at: 2000,
    file_name: 'a.csv',
    description: '',
    content_type: 'text/csv',
    staged_object: 'staging/files/f1',
    size: 5,
    sha256: Buffer.alloc(32, 2),
    enforce_schema: true,
  };
  const ok: TaskEvent = { type: 'FileDefinitionSucceeded', task_id: 'f-t1', file_id: 'f1', size: 5, sha256: Buffer.alloc(32, 2), at: 2100 };
  const bad: TaskEvent = {
    type: 'TaskFailed',
    task_id: 'f-t1',
    reason: 'line 3: expected 2 fields',
    rows_total: 0,
    rows_rejected: 0,
    errors: [{ row: 3, column: 'csv', reason: 'expected 2 fields' }],
    at: 2100,
  };

  it('the command queues a file_definition task that knows its file and size', () => {
    expect(foldTasks([defineFile]).get('f-t1')).toMatchObject({
      kind: 'file_definition',
      status: 'queued',
      user_name: 'ada',
      file_id: 'f1',
      payload_bytes: 5,
      result: null,
      payload_sha256: '02'.repeat(32),
    });
  });

  it('succeeds with the file id in its result, once; a failure after it changes nothing', () => {
    const task = foldTasks([defineFile, { type: 'TaskStarted', task_id: 'f-t1', at: 2050 }, ok, bad, ok]).get('f-t1')!;
    expect(task).toMatchObject({ status: 'succeeded', updated_at: 2100, result: { file_id: 'f1', size: 5, sha256: '02'.repeat(32) }, errors: [] });
  });

  it('fails with the line of the schema problem', () => {
    expect(foldTasks([defineFile, bad, ok]).get('f-t1')).toMatchObject({
      status: 'failed',
      result: null,
      errors: [{ row: 3 }],
      reason: 'line 3: expected 2 fields',
    });
  });
});

describe('rebuild tasks', () => {
  const requested: TaskEvent = {
    type: 'RebuildRequested',
    task_id: 'r1',
    user_name: 'cli',
    at: 3000,
    projection: 'points',
    from: null,
    to: null,
    database: null,
    swap: 'if_verified',
  };

  it('queue, run with the points written so far, and succeed with where they went', () => {
    const running = foldTasks([
      requested,
      { type: 'TaskStarted', task_id: 'r1', at: 3001 },
      { type: 'TaskProgress', task_id: 'r1', rows_done: 500, at: 3002 },
    ]).get('r1')!;
    expect(running).toMatchObject({ kind: 'points_rebuild', status: 'running', user_name: 'cli', rows_done: 500, rows_total: null, result: null });
    const done = foldTasks([
      requested,
      { type: 'TaskStarted', task_id: 'r1', at: 3001 },
      {
        type: 'RebuildSucceeded',
        task_id: 'r1',
        generation: 3,
        database: 'meridian',
        table: 'points_g3',
        events: 40,
        points: 1000,
        verified: true,
        swapped: true,
        at: 3010,
      },
    ]).get('r1')!;
    expect(done).toMatchObject({
      status: 'succeeded',
      rows_done: 1000,
      rows_total: 1000,
      updated_at: 3010,
      result: { generation: 3, database: 'meridian', table: 'points_g3', events: 40, points: 1000, verified: true, swapped: true },
    });
  });
});
