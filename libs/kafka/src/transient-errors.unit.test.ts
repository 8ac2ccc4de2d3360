import { describe, expect, it } from 'vitest';
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { classify, isKafkaTransient, waitingMayCure } from '@meridian/retry';

/** kafkajs builds protocol errors from its table of broker error codes; these are the ones a fresh cluster answers. */
const protocol = (type: string, retriable: boolean) => new KafkaJSProtocolError({ type, code: 0, retriable, message: type } as unknown as Error);

// The classifier (libs/retry) on the errors kafkajs really builds: the Kafka adapter is where they meet.
describe('waitingMayCure on kafkajs errors', () => {
  it('retries what a fresh Kafka answers while it elects leaders and loads coordinators', () => {
    for (const type of [
      'NOT_LEADER_FOR_PARTITION',
      'LEADER_NOT_AVAILABLE',
      'UNKNOWN_TOPIC_OR_PARTITION',
      'GROUP_COORDINATOR_NOT_AVAILABLE',
      'GROUP_LOAD_IN_PROGRESS',
    ]) {
      expect(waitingMayCure(protocol(type, true)), type).toBe(true);
    }
    expect(waitingMayCure(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:1'))).toBe(true);
  });

  it('looks through the wrappers kafkajs puts around retries it gave up', () => {
    const exhausted = new KafkaJSNumberOfRetriesExceeded(protocol('NOT_LEADER_FOR_PARTITION', true), { retryCount: 8, retryTime: 5000 });
    expect((exhausted as unknown as { retriable: boolean }).retriable).toBe(false);
    expect(waitingMayCure(exhausted)).toBe(true);
    expect(isKafkaTransient(exhausted)).toBe(true);
  });

  it('stops on final refusals and on errors of the program', () => {
    expect(waitingMayCure(protocol('TOPIC_AUTHORIZATION_FAILED', false))).toBe(false);
    expect(waitingMayCure(new KafkaJSNonRetriableError('Cannot subscribe to topic while consumer is running'))).toBe(false);
    expect(waitingMayCure(new TypeError('x is not a function'))).toBe(false);
    expect(isKafkaTransient(protocol('TOPIC_AUTHORIZATION_FAILED', false))).toBe(false);
    expect(classify(new KafkaJSNonRetriableError('Cannot subscribe to topic while consumer is running'))).toBe('final');
  });

  it('waits out errors of unknown kind (a dependency unreachable or still starting)', () => {
    expect(waitingMayCure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
  });
});
