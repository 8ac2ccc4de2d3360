import { describe, expect, it } from 'vitest';
import { nextConsumerState, notServing, type ConsumerEvent, type ConsumerState } from './consumer-watch.ts';

const run = (...events: ConsumerEvent[]): ConsumerState => events.reduce(nextConsumerState, { kind: 'starting' } as ConsumerState);

describe('consumer state from kafkajs events', () => {
  it('serves once joined, and again after a crash kafkajs restarts', () => {
    expect(notServing('commands', run())).toBe('commands has not joined its consumer group yet');
    expect(notServing('commands', run({ type: 'joined' }))).toBeNull();
    const restarting = run({ type: 'joined' }, { type: 'crashed', error: 'KafkaJSConnectionError: refused', restart: true });
    expect(restarting).toEqual({ kind: 'restarting', error: 'KafkaJSConnectionError: refused' });
    expect(nextConsumerState(restarting, { type: 'joined' })).toEqual({ kind: 'joined' });
  });

  it('a crash with no restart is final, even if a join event follows', () => {
    const failed = run({ type: 'joined' }, { type: 'crashed', error: 'KafkaJSProtocolError: inconsistent protocol', restart: false });
    expect(failed.kind).toBe('failed');
    expect(nextConsumerState(failed, { type: 'joined' })).toBe(failed);
    expect(notServing('projector', failed)).toBe('projector failed for good: KafkaJSProtocolError: inconsistent protocol');
  });
});
