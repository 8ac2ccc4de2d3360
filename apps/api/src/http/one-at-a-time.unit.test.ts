import { describe, expect, it } from 'vitest';
import { OneAtATime } from './one-at-a-time.ts';

describe('OneAtATime', () => {
  it('runs the calls of one key in order, one after the other, and other keys beside them', async () => {
    const lock = new OneAtATime();
    const log: string[] = [];
    const step = (name: string, ms: number) => async () => {
      log.push(`${name} start`);
      await new Promise((r) => setTimeout(r, ms));
      log.push(`${name} end`);
      return name;
    };
    const results = await Promise.all([lock.run('k', step('a', 30)), lock.run('k', step('b', 1)), lock.run('other', step('c', 5))]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(log.indexOf('b start')).toBeGreaterThan(log.indexOf('a end'));
    expect(log.indexOf('c end')).toBeLessThan(log.indexOf('a end'));
  });

  it('goes on after a call that failed, and forgets a key once its calls are done', async () => {
    const lock = new OneAtATime();
    await expect(lock.run('k', () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(await lock.run('k', () => Promise.resolve(2))).toBe(2);
    expect((lock as unknown as { tails: Map<string, unknown> }).tails.size).toBe(0);
  });
});
