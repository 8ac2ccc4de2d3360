import { describe, expect, it } from 'vitest';
import type { UserRecord } from '../accounts/state.ts';
import type { MetricsUploadRequested } from '../uploads/events.ts';
import type { TaskEvent } from './events.ts';
import { decideStart, type StartDecision } from './decide.ts';
import { foldTasks } from './state.ts';

const upload: MetricsUploadRequested = {
  type: 'MetricsUploadRequested',
  task_id: 't1',
  user_name: 'ada',
  at: 1000,
  metric_name: null,
  on_error: 'skip',
  source: 'file',
  payload: null,
  staged_object: 'staging/t1',
  payload_bytes: 10,
  payload_sha256: Buffer.alloc(32, 1),
  idempotency_key: null,
};
const start = (at: number): TaskEvent => ({ type: 'TaskStarted', task_id: 't1', at });
const release = (at: number): TaskEvent => ({ type: 'TaskReleased', task_id: 't1', at });
const ada: UserRecord = { user_name: 'ada', is_admin: false, created_at: 0, disabled_at: null, key_ids: [], entitlements: [], file_quota_bytes: null };
const MAX = 3;

/** given the task's history and its owner, when a worker is handed the command, then it decides this. */
function given(history: TaskEvent[], owner: UserRecord | 'unknown' = ada): { then(expected: StartDecision): void } {
  const task = foldTasks(history).get('t1');
  return { then: (expected) => expect(decideStart(task, owner === 'unknown' ? undefined : owner, MAX)).toEqual(expected) };
}

describe('counting the runs of a command (the tasks fold)', () => {
  const runs = (history: TaskEvent[]) => foldTasks(history).get('t1')!.open_runs;

  it('each start of a run counts until the run ends or is released', () => {
    expect(runs([upload])).toBe(0);
    expect(runs([upload, start(1)])).toBe(1);
    expect(runs([upload, start(1), start(2), start(3)])).toBe(3);
  });

  it('a released run (a rebalance, Kafka failing under a live worker) does not count', () => {
    expect(runs([upload, start(1), release(2), start(3), release(4), start(5)])).toBe(1);
  });

  it('a release that arrives after the next run started still takes one run off', () => {
    expect(runs([upload, start(1), start(2), release(3)])).toBe(1);
  });

  it('a release never counts below zero', () => {
    expect(runs([upload, start(1), release(2), release(3)])).toBe(0);
  });
});

describe('deciding whether to run a command', () => {
  it('runs a new command of an enabled user', () => {
    given([upload]).then({ kind: 'run' });
  });

  it('runs again after fewer deaths than the limit', () => {
    given([upload, start(1), start(2)]).then({ kind: 'run' });
  });

  it('fails and sets aside a command that was started the limit of times without finishing', () => {
    given([upload, start(1), start(2), start(3)]).then({ kind: 'fail', reason: 'processing stopped 3 times; the upload was not stored', deadLetter: true });
  });

  it('does not count runs released by live workers towards the limit', () => {
    given([upload, start(1), release(2), start(3), release(4), start(5), start(6)]).then({ kind: 'run' });
  });

  it('says the file was not stored for a file definition', () => {
    const define: TaskEvent = {
      type: 'FileDefinitionRequested',
      task_id: 't1',
      file_id: 'f1',
      user_name: 'ada',
      at: 1000,
      file_name: 'a.csv',
      description: '',
      content_type: 'text/csv',
      staged_object: 'staging/files/f1',
      size: 5,
      sha256: Buffer.alloc(32, 2),
      enforce_schema: true,
    };
    given([define, start(1), start(2), start(3)]).then({ kind: 'fail', reason: 'processing stopped 3 times; the file was not stored', deadLetter: true });
  });

  it('fails the command of a user disabled after sending it, without setting it aside', () => {
    given([upload], { ...ada, disabled_at: 1500 }).then({
      kind: 'fail',
      reason: 'the account that sent it is disabled; the upload was not stored',
      deadLetter: false,
    });
  });

  it('fails the command of a user the accounts do not know', () => {
    given([upload], 'unknown').then({ kind: 'fail', reason: 'the account that sent it is disabled; the upload was not stored', deadLetter: false });
  });

  it('sets aside a command that kills workers whoever sent it', () => {
    given([upload, start(1), start(2), start(3)], { ...ada, disabled_at: 1500 }).then({
      kind: 'fail',
      reason: 'processing stopped 3 times; the upload was not stored',
      deadLetter: true,
    });
  });

  it('skips a task that has ended (a command sent twice)', () => {
    given([upload, start(1), { type: 'TaskFailed', task_id: 't1', reason: 'x', rows_total: 0, rows_rejected: 0, errors: [], at: 2 }]).then({ kind: 'skip' });
    given([
      upload,
      start(1),
      start(2),
      start(3),
      { type: 'UploadParsed', task_id: 't1', rows_total: 1, points_accepted: 1, rows_rejected: 0, errors: [], partitions: [0], metrics: ['m'], at: 4 },
    ]).then({ kind: 'skip' });
  });
});
