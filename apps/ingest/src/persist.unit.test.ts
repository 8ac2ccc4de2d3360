import { describe, expect, it } from 'vitest';
import { createLogger } from '@meridian/observability';
import { persistWhileRunning, Stopping } from './persist.ts';

const logger = createLogger({ name: 'persist-unit', level: 'silent' });

describe('persistWhileRunning', () => {
  it('retries a failing attempt, heartbeating between attempts, until it succeeds', async () => {
    let heartbeats = 0;
    let attempts = 0;
    const persist = persistWhileRunning(logger, {
      isRunning: () => true,
      heartbeat: async () => {
        heartbeats += 1;
      },
    });
    const result = await persist('reading', async () => {
      attempts += 1;
      if (attempts < 3) throw new Error('ClickHouse down');
      return 'read';
    });
    expect(result).toBe('read');
    expect(attempts).toBe(3);
    expect(heartbeats).toBe(2);
  });

  it('gives up with Stopping once the consumer stops, leaving the work to the next owner', async () => {
    let running = true;
    let attempts = 0;
    const persist = persistWhileRunning(logger, { isRunning: () => running, heartbeat: async () => undefined });
    const outcome = persist('reading', async () => {
      attempts += 1;
      if (attempts === 2) running = false;
      throw new Error('ClickHouse down');
    });
    await expect(outcome).rejects.toBeInstanceOf(Stopping);
    expect(attempts).toBe(2);
  });

  it('gives up when a heartbeat fails (the partition was lost to a rebalance)', async () => {
    let attempts = 0;
    const persist = persistWhileRunning(logger, {
      isRunning: () => true,
      heartbeat: async () => {
        throw new Error('The group is rebalancing');
      },
    });
    await expect(
      persist('reading', async () => {
        attempts += 1;
        throw new Error('ClickHouse down');
      }),
    ).rejects.toThrow(/rebalancing/);
    expect(attempts).toBe(1);
  });
});
