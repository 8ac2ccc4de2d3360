import { describe, expect, it } from 'vitest';
import { sharedRead } from './shared-read.ts';

/** A read whose answers the test releases one at a time: each resolves with its sequence number. */
function controlled() {
  const pending: Array<{ n: number; resolve(n: number): void; reject(e: Error): void }> = [];
  let started = 0;
  const read = () =>
    new Promise<number>((resolve, reject) => {
      started++;
      pending.push({ n: started, resolve, reject });
    });
  const settle = async (fail = false) => {
    const p = pending.shift()!;
    if (fail) p.reject(new Error(`read ${p.n} failed`));
    else p.resolve(p.n);
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { read, settle, started: () => started };
}

describe('sharedRead', () => {
  it('has callers that arrive during a read share the one after it, never the one under way', async () => {
    const c = controlled();
    const shared = sharedRead(c.read);
    const first = shared();
    const during = Array.from({ length: 10 }, () => shared());
    expect(c.started()).toBe(1);
    await c.settle();
    expect(await first).toBe(1);
    expect(c.started()).toBe(2);
    const later = shared(); // arrives while read 2 runs: waits for read 3
    await c.settle();
    expect(await Promise.all(during)).toEqual(Array(10).fill(2));
    expect(c.started()).toBe(3);
    await c.settle();
    expect(await later).toBe(3);
    expect(c.started()).toBe(3);
  });

  it('tells a failure to those who shared that read only, and reads again for the next caller', async () => {
    const c = controlled();
    const shared = sharedRead(c.read);
    const first = shared();
    const waiting = shared();
    await c.settle(true);
    await expect(first).rejects.toThrow('read 1 failed');
    await c.settle();
    expect(await waiting).toBe(2);
    const fresh = shared();
    expect(c.started()).toBe(3);
    await c.settle();
    expect(await fresh).toBe(3);
  });
});
