import { describe, expect, it } from 'vitest';
import { createLogger } from '@meridian/observability';
import { startStageSweeper } from './stage-sweeper.ts';

const logger = createLogger({ name: 't', level: 'silent' });

describe('stage sweeper', () => {
  it('sweeps at its interval with its ttl, goes on after a failed sweep, and stops', async () => {
    const ages: number[] = [];
    let enough!: () => void;
    const thrice = new Promise<void>((r) => {
      enough = r;
    });
    const sweeper = startStageSweeper({
      ttlMs: 7_200_000,
      intervalMs: 1,
      logger,
      sweep: async (age) => {
        ages.push(age);
        if (ages.length === 3) enough();
        if (ages.length === 1) throw new Error('ClickHouse unavailable');
        return ['points_stage_fedcba9876543210_0123456789abcdef_p0'];
      },
    });
    await thrice;
    await sweeper.stop();
    const after = ages.length;
    await new Promise((r) => setTimeout(r, 20));
    expect(ages.length).toBe(after);
    expect(ages.slice(0, 3)).toEqual([7_200_000, 7_200_000, 7_200_000]);
  });
});
