import { describe, expect, it } from 'vitest';
import { createLogger } from '@meridian/observability';
import { Projection } from '@meridian/projection';
import { FAST_RETRY } from '@meridian/retry';
import { Stopping } from '../persist.ts';
import { persist, stillOwned, type BatchContext } from './batch-context.ts';
import { commitDone } from './flush.ts';
import { Heart } from './heart.ts';

const logger = createLogger({ name: 't', level: 'silent' });

function context(running: () => boolean) {
  const commits: unknown[] = [];
  const ctx: BatchContext = {
    isRunning: running,
    heart: new Heart(async () => undefined),
    uncommittedOffsets: () => ({ topics: [{ topic: 'points', partitions: [{ partition: 0, offset: '5' }] }] }),
    commitOffsetsIfNecessary: async (offsets) => {
      commits.push(offsets);
    },
  };
  return { ctx, commits };
}

describe('projector batch context', () => {
  it('persist retries a failing attempt, telling it that it is a retry, until it succeeds', async () => {
    const { ctx } = context(() => true);
    const retries: boolean[] = [];
    await persist(
      logger,
      'work',
      ctx,
      async (retry) => {
        retries.push(retry);
        if (retries.length < 3) throw new Error('not yet');
      },
      FAST_RETRY,
    );
    expect(retries).toEqual([false, true, true]);
  });

  it('persist stops with Stopping once the consumer stops, leaving the work to the next owner', async () => {
    let running = true;
    const { ctx } = context(() => running);
    let attempts = 0;
    const done = persist(
      logger,
      'work',
      ctx,
      async () => {
        attempts++;
        running = false;
        throw new Error('failed');
      },
      FAST_RETRY,
    );
    await expect(done).rejects.toBeInstanceOf(Stopping);
    expect(attempts).toBe(1);
  });

  it('stillOwned throws a heartbeat failure seen during work (a rebalance)', async () => {
    const rebalance = new Error('rebalancing');
    const { ctx } = context(() => true);
    const heart = new Heart(async () => {
      throw rebalance;
    }, 1);
    ctx.heart = heart;
    await heart.during(new Promise((r) => setTimeout(r, 20)));
    expect(() => stillOwned(ctx, 'work')).toThrow(rebalance);
  });

  it('commitDone commits the consumed positions only when nothing taken is pending', async () => {
    const { ctx, commits } = context(() => true);
    const projection = new Projection(10);
    await commitDone({ projection }, ctx);
    expect(commits).toHaveLength(1);
    projection.addSeal({ task_id: 't', partition: 0, offset: 4 }, 0);
    await commitDone({ projection }, ctx);
    expect(commits).toHaveLength(1);
  });
});
