import { describe, expect, it } from 'vitest';
import { waitMs } from './routes.ts';

describe('the long-poll wait of GET /api/v1/tasks/{task_id}', () => {
  it('is what was asked, none when absent or 0, and at most the cap', () => {
    expect(waitMs(undefined, 30)).toBe(0);
    expect(waitMs(0, 30)).toBe(0);
    expect(waitMs(10, 30)).toBe(10_000);
    expect(waitMs(3600, 30)).toBe(30_000);
    expect(waitMs(10, 0)).toBe(0); // a cap of 0 turns waiting off
  });
});
