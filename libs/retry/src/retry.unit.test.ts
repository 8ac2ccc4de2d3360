import { describe, expect, it } from 'vitest';
import { classify, commandFailure, FAST_RETRY, isKafkaTransient, retry, waitingMayCure } from './index.ts';

/** kafkajs' errors as they look from ESM (their classes are not importable by name there): name, retriable, type. */
const kafka = (name: string, retriable: boolean, extra: object = {}) => Object.assign(new Error(name), { name, retriable, ...extra });

describe('retry', () => {
  it('retries until the attempt succeeds, numbering attempts, and returns its value', async () => {
    const seen: number[] = [];
    const value = await retry(
      async (n) => {
        seen.push(n);
        if (n < 3) throw new Error(`down ${n}`);
        return 42;
      },
      { ...FAST_RETRY },
    );
    expect([value, seen]).toEqual([42, [1, 2, 3]]);
  });

  it('throws the last failure itself after the given attempts, telling onRetry of each wait', async () => {
    const retries: Array<[string, number]> = [];
    await expect(
      retry(
        async (n) => {
          throw new Error(`down ${n}`);
        },
        {
          ...FAST_RETRY,
          attempts: 3,
          onRetry: (error, n) => retries.push([(error as Error).message, n]),
        },
      ),
    ).rejects.toThrow('down 3');
    expect(retries).toEqual([
      ['down 1', 1],
      ['down 2', 2],
    ]);
  });

  it('bails out at once on a failure the classifier refuses, and ends when its signal aborts', async () => {
    let calls = 0;
    await expect(
      retry(
        async () => {
          calls++;
          throw new TypeError('x is not a function');
        },
        { ...FAST_RETRY },
      ),
    ).rejects.toThrow(TypeError);
    expect(calls).toBe(1);
    const stop = new AbortController();
    calls = 0;
    await expect(
      retry(
        async () => {
          if (++calls === 2) stop.abort();
          throw new Error('down');
        },
        { ...FAST_RETRY, signal: stop.signal },
      ),
    ).rejects.toThrow('down');
    expect(calls).toBe(2);
  });

  it('waits with exponential backoff, capped, varied by the jitter, through the given wait', async () => {
    const waits: number[] = [];
    await expect(
      retry(
        async () => {
          throw new Error('down');
        },
        {
          initialDelayMs: 100,
          factor: 2,
          maxDelayMs: 500,
          jitter: 0,
          attempts: 6,
          wait: async (ms) => {
            waits.push(ms);
          },
        },
      ),
    ).rejects.toThrow('down');
    expect(waits).toEqual([100, 200, 400, 500, 500]);
    const jittered: number[] = [];
    await expect(
      retry(
        async () => {
          throw new Error('down');
        },
        {
          initialDelayMs: 1000,
          factor: 1,
          maxDelayMs: 10_000,
          jitter: 0.2,
          attempts: 50,
          wait: async (ms) => {
            jittered.push(ms);
          },
        },
      ),
    ).rejects.toThrow('down');
    expect(Math.min(...jittered)).toBeGreaterThanOrEqual(800);
    expect(Math.max(...jittered)).toBeLessThanOrEqual(1200);
    expect(new Set(jittered).size).toBeGreaterThan(1);
  });

  it('takes the wait a failure names (Retry-After) instead of the backoff, and the backoff when it names none', async () => {
    const waits: number[] = [];
    await expect(
      retry(
        async (n) => {
          throw Object.assign(new Error('busy'), { afterMs: n === 2 ? undefined : 3000 });
        },
        {
          initialDelayMs: 100,
          factor: 2,
          maxDelayMs: 500,
          jitter: 0,
          attempts: 4,
          delayOf: (error) => (error as { afterMs?: number }).afterMs,
          wait: async (ms) => {
            waits.push(ms);
          },
        },
      ),
    ).rejects.toThrow('busy');
    expect(waits).toEqual([3000, 200, 3000]);
  });
});

describe('classify', () => {
  it('transient: a retriable Kafka error, or one wrapped by a non-retriable one; outage codes; retriable: true', () => {
    expect(classify(kafka('KafkaJSConnectionError', true))).toBe('transient');
    expect(classify(kafka('KafkaJSNumberOfRetriesExceeded', false, { cause: kafka('KafkaJSProtocolError', true) }))).toBe('transient');
    expect(
      classify(kafka('KafkaJSNonRetriableError', false, { originalError: kafka('KafkaJSProtocolError', false, { type: 'NOT_LEADER_FOR_PARTITION' }) })),
    ).toBe('transient');
    expect(classify(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('transient');
    expect(classify(Object.assign(new Error('S3'), { code: 'SlowDown' }))).toBe('transient');
    expect(classify(new AggregateError([new Error('a'), Object.assign(new Error('b'), { code: 'ETIMEDOUT' })]))).toBe('transient');
    expect(classify(Object.assign(new Error('later'), { retriable: true }))).toBe('transient');
  });

  it('final: retriable: false (a Kafka refusal, an undecodable event) and errors of the program', () => {
    expect(classify(kafka('KafkaJSProtocolError', false, { type: 'TOPIC_AUTHORIZATION_FAILED' }))).toBe('final');
    expect(classify(Object.assign(new Error('bad bytes'), { name: 'UndecodableEventError', retriable: false }))).toBe('final');
    expect(classify(new TypeError('x is not a function'))).toBe('final');
  });

  it('unknown otherwise: waited out where giving up is worse, but not a Kafka failure to redeliver', () => {
    const odd = new Error('something else');
    expect(classify(odd)).toBe('unknown');
    expect(waitingMayCure(odd)).toBe(true);
    expect(isKafkaTransient(odd)).toBe(false);
    expect(isKafkaTransient(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isKafkaTransient(kafka('KafkaJSConnectionError', true))).toBe(true);
  });
});

describe('commandFailure: the one rule for a failed run of a command', () => {
  it("redelivers Kafka's own trouble and a transaction the Kafka adapter cut short (named as kafkajs names its errors)", () => {
    expect(commandFailure(kafka('KafkaJSConnectionError', true))).toBe('redeliver');
    expect(
      commandFailure(kafka('KafkaJSNonRetriableError', false, { originalError: kafka('KafkaJSProtocolError', false, { type: 'NOT_COORDINATOR_FOR_GROUP' }) })),
    ).toBe('redeliver');
    for (const name of ['TransactionInterrupted', 'TransactionOutcomeUnknown', 'ProducerFenced']) {
      expect(
        commandFailure(
          Object.assign(new Error('cut short'), { name, retriable: true, cause: kafka('KafkaJSProtocolError', false, { type: 'INVALID_PRODUCER_EPOCH' }) }),
        ),
        name,
      ).toBe('redeliver');
    }
  });

  it('retries within the run what waiting may cure elsewhere (storage, network, unknown), and fails the final at once', () => {
    expect(commandFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('retry');
    expect(commandFailure(Object.assign(new Error('S3'), { code: 'SlowDown' }))).toBe('retry');
    expect(commandFailure(new Error('something else'))).toBe('retry');
    expect(commandFailure(new TypeError('x is not a function'))).toBe('fail');
    expect(commandFailure(kafka('KafkaJSProtocolError', false, { type: 'TOPIC_AUTHORIZATION_FAILED' }))).toBe('fail');
  });
});
