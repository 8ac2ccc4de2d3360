import { describe, expect, it } from 'vitest';
import { createLogger } from '@meridian/observability';
import { untilDone } from './until-done.ts';

const logger = createLogger({ name: 't', level: 'silent' });
/** An error that says whether waiting may cure it, as kafkajs' errors do (libs/kafka tests the classifier on those). */
const failure = (type: string, retriable: boolean) => Object.assign(new Error(type), { retriable });

describe('untilDone', () => {
  it('retries a retriable failure until the attempt succeeds, and returns its value', async () => {
    let calls = 0;
    const value = await untilDone(
      't',
      async () => {
        if (++calls < 3) throw failure('NOT_LEADER_FOR_PARTITION', true);
        return 42;
      },
      logger,
    );
    expect([value, calls]).toEqual([42, 3]);
  });

  it('throws a final failure at once, and the last one after the given attempts', async () => {
    let calls = 0;
    await expect(
      untilDone(
        't',
        async () => {
          calls++;
          throw failure('TOPIC_AUTHORIZATION_FAILED', false);
        },
        logger,
      ),
    ).rejects.toThrow('TOPIC_AUTHORIZATION_FAILED');
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      untilDone(
        't',
        async () => {
          calls++;
          throw new Error(`down ${calls}`);
        },
        logger,
        { attempts: 2 },
      ),
    ).rejects.toThrow('down 2');
    expect(calls).toBe(2);
  });
});
