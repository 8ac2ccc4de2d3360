import { describe, expect, it } from 'vitest';
import { withDeadline } from './with-timeout.ts';

const never = () => new Promise<never>(() => undefined);

describe('withDeadline', () => {
  it('gives what the work gives within its time', async () => {
    await expect(withDeadline(() => Promise.resolve(42), 1000, 'work')).resolves.toBe(42);
    await expect(withDeadline(() => Promise.reject(new Error('broke')), 1000, 'work')).rejects.toThrow('broke');
  });

  it('rejects at the deadline even when the work ignores its signal, and aborts the signal', async () => {
    let seen: AbortSignal | undefined;
    const started = Date.now();
    await expect(
      withDeadline(
        (signal) => {
          seen = signal;
          return never();
        },
        50,
        'a hung pass',
      ),
    ).rejects.toThrow('a hung pass took longer than 50 ms');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(seen?.aborted).toBe(true);
  });

  it("passes its parent's abort on to the work and waits for the work to end", async () => {
    const parent = new AbortController();
    let ended = false;
    const run = withDeadline(
      (signal) =>
        new Promise<string>((resolve) =>
          signal.addEventListener('abort', () =>
            setTimeout(() => {
              ended = true;
              resolve('wound down');
            }, 30),
          ),
        ),
      60_000,
      'work',
      parent.signal,
    );
    parent.abort(new Error('stopping'));
    await expect(run).resolves.toBe('wound down');
    expect(ended).toBe(true);
  });

  it('swallows a failure that comes after the deadline rather than leave it unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await expect(withDeadline(() => new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 60)), 10, 'work')).rejects.toThrow('took longer');
      await new Promise((r) => setTimeout(r, 150));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
