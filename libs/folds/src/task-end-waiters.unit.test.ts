import { describe, expect, it } from 'vitest';
import type { Task, TaskStatus } from '@meridian/domain';
import { TaskEndWaiters } from './task-end-waiters.ts';

const task = (task_id: string, status: TaskStatus, user_name = 'ann') => ({ task_id, status, user_name }) as Task;
/** 'woken' when `p` has settled by the time every pending callback has run, else 'waiting'. */
const state = async (p: Promise<void>) => Promise.race([p.then(() => 'woken'), new Promise((r) => setImmediate(() => r('waiting')))]);
const LONG = 60_000;

describe('waiters for a task to end', () => {
  it('wakes every waiter of a task when it succeeds or fails, not before, and not those of other tasks', async () => {
    const waiters = new TaskEndWaiters();
    const a = [waiters.wait('a', LONG), waiters.wait('a', LONG)];
    const b = waiters.wait('b', LONG);
    waiters.touched(task('a', 'running'));
    waiters.touched(undefined);
    expect(await state(a[0]!)).toBe('waiting');
    waiters.touched(task('a', 'succeeded'));
    expect(await Promise.all(a.map(state))).toEqual(['woken', 'woken']);
    expect(await state(b)).toBe('waiting');
    expect(waiters.size).toBe(1);
    waiters.touched(task('b', 'failed'));
    expect(await state(b)).toBe('woken');
    expect(waiters.size).toBe(0);
  });

  it('lets a waiter go when its time runs out or its caller goes away, and keeps nothing of it', async () => {
    const waiters = new TaskEndWaiters();
    const gone = new AbortController();
    const left = waiters.wait('a', LONG, gone.signal);
    const timed = waiters.wait('a', 20);
    const staying = waiters.wait('a', LONG);
    expect(waiters.size).toBe(3);
    await timed;
    expect(waiters.size).toBe(2);
    gone.abort();
    expect(await state(left)).toBe('woken');
    expect(waiters.size).toBe(1);
    expect(await state(waiters.wait('a', LONG, gone.signal))).toBe('woken'); // already aborted: no wait at all
    expect(waiters.size).toBe(1);
    waiters.close();
    expect(await state(staying)).toBe('woken');
    expect(await state(waiters.wait('c', LONG))).toBe('woken'); // closed: nothing waits any more
    expect(waiters.size).toBe(0);
  });

  it('wakes the uploads waiting on a user when any task of that user ends, not those of other users', async () => {
    const waiters = new TaskEndWaiters();
    const ann = [waiters.waitForUser('ann', LONG), waiters.waitForUser('ann', LONG)];
    const bob = waiters.waitForUser('bob', LONG);
    const closing = waiters.waitForUser('bob', LONG);
    waiters.touched(task('a1', 'running', 'ann'));
    expect(await state(ann[0]!)).toBe('waiting');
    waiters.touched(task('a1', 'succeeded', 'ann'));
    expect(await Promise.all(ann.map(state))).toEqual(['woken', 'woken']);
    expect(await state(bob)).toBe('waiting');
    expect(waiters.size).toBe(2);
    waiters.touched(task('b1', 'failed', 'bob'));
    expect(await state(bob)).toBe('woken');
    expect(await state(closing)).toBe('woken');
    expect(waiters.size).toBe(0);
  });
});
