import { describe, expect, it } from 'vitest';
import { checkReadiness } from './readiness.ts';

describe('checkReadiness', () => {
  it('is ready only when every probe answers', async () => {
    const result = await checkReadiness(
      [
        { name: 'a', check: async () => {} },
        {
          name: 'b',
          check: async () => {
            throw new Error('connection refused');
          },
        },
      ],
      100,
    );
    expect(result.ready).toBe(false);
    expect(result.checks).toEqual({ a: { status: 'up' }, b: { status: 'down', error: 'connection refused' } });
  });

  it('calls a probe that hangs down after the timeout', async () => {
    const result = await checkReadiness([{ name: 'slow', check: () => new Promise(() => {}) }], 50);
    expect(result.checks.slow).toEqual({ status: 'down', error: 'slow did not answer within 50 ms' });
  });
});
