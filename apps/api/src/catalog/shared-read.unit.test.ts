import { describe, expect, it } from 'vitest';
import { sharedRead, sharedReadBy } from './shared-read.ts';

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

describe('sharedReadBy', () => {
  it('shares the reads of one key and never those of two, and starts afresh once a key is done with', async () => {
    const started: string[] = [];
    const pending: Array<() => void> = [];
    const read = (match: string, text: string) =>
      new Promise<string>((resolve) => {
        const n = started.push(`${match}:${text}`);
        pending.push(() => resolve(`${match}:${text}#${n}`));
      });
    const shared = sharedReadBy(read, (match, text) => `${match}\u0000${text}`);
    const a = [shared('contains', 'x'), shared('contains', 'x')];
    const b = shared('starts_with', 'x');
    expect(started).toEqual(['contains:x', 'starts_with:x']);
    // The first caller's read is its own; the second arrived during it and shares the next.
    pending.shift()!();
    pending.shift()!();
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(started).toEqual(['contains:x', 'starts_with:x', 'contains:x']);
    pending.shift()!();
    expect(await Promise.all(a)).toEqual(['contains:x#1', 'contains:x#3']);
    expect(await b).toBe('starts_with:x#2');
    for (let i = 0; i < 5; i++) await Promise.resolve();
    const again = shared('contains', 'x');
    expect(started).toHaveLength(4);
    pending.shift()!();
    expect(await again).toBe('contains:x#4');
  });
});
