import { describe, expect, it } from 'vitest';
import type { Kafka, Producer, Transaction } from 'kafkajs';
import { ProducerFenced, TransactionalProducer, TransactionOutcomeUnknown } from './transactional.ts';

/**
 * A stand-in for kafkajs' transactional producer with its 2.2.4 flaw: once an EndTxn fails, the
 * producer is stuck (COMMITTING/ABORTING) and every later transaction() throws.
 */
function fakeProducers(failures: { commit?: number[]; abort?: number[]; fencedSends?: boolean }) {
  const made: Array<{ connected: boolean; disconnected: boolean; commits: number }> = [];
  let ends = 0;
  const make = (): Producer => {
    const state = { connected: false, disconnected: false, commits: 0 };
    made.push(state);
    let stuck = false;
    const end = (kind: 'commit' | 'abort') => async () => {
      const n = ++ends;
      if (failures[kind]?.includes(n)) {
        stuck = true;
        throw Object.assign(new Error('Connection error: read ECONNRESET'), { name: 'KafkaJSConnectionError', retriable: true });
      }
      if (kind === 'commit') state.commits++;
    };
    return {
      connect: async () => {
        state.connected = true;
      },
      disconnect: async () => {
        state.disconnected = true;
      },
      transaction: async () => {
        if (stuck) throw Object.assign(new Error('Transaction state exception: Invalid transition'), { name: 'KafkaJSNonRetriableError', retriable: false });
        const send = async () => {
          if (failures.fencedSends && made.length === 1) {
            // kafkajs' shape: a non-retriable error wrapping the broker's answer.
            const answer = Object.assign(new Error('Producer attempted an operation with an old epoch'), {
              name: 'KafkaJSProtocolError',
              type: 'INVALID_PRODUCER_EPOCH',
              retriable: false,
            });
            throw Object.assign(new Error(answer.message), { name: 'KafkaJSNonRetriableError', retriable: false, originalError: answer });
          }
          return [];
        };
        return {
          send,
          sendBatch: async () => [],
          sendOffsets: async () => undefined,
          isActive: () => true,
          commit: end('commit'),
          abort: end('abort'),
        } as unknown as Transaction;
      },
    } as unknown as Producer;
  };
  return { made, producer: new TransactionalProducer({} as Kafka, 'group-p0', make) };
}

describe('TransactionalProducer', () => {
  it('connects one producer on first use and keeps it while transactions end cleanly', async () => {
    const { made, producer } = fakeProducers({});
    await producer.ready();
    for (let i = 0; i < 3; i++) await (await producer.transaction()).commit();
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ connected: true, commits: 3 });
    expect(producer.replaced).toBe(0);
  });

  it('a failed commit rethrows as an unknown outcome and the next transaction runs on a new producer', async () => {
    const { made, producer } = fakeProducers({ commit: [1] });
    const first = await producer.transaction();
    const failure = await first.commit().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(TransactionOutcomeUnknown);
    expect((failure as TransactionOutcomeUnknown).retriable).toBe(true);
    expect((failure as Error).message).toContain('group-p0');
    expect(made[0]!.disconnected).toBe(true);
    expect(producer.replaced).toBe(1);
    // Without the replacement kafkajs would refuse this begin for good.
    await (await producer.transaction()).commit();
    expect(made).toHaveLength(2);
    expect(made[1]).toMatchObject({ connected: true, commits: 1 });
  });

  it('a failed abort rethrows the error itself (nothing was committed) and replaces the producer', async () => {
    const { made, producer } = fakeProducers({ abort: [1] });
    const tx = await producer.transaction();
    const failure = await tx.abort().catch((e: unknown) => e);
    expect(failure).not.toBeInstanceOf(TransactionOutcomeUnknown);
    expect((failure as Error).name).toBe('KafkaJSConnectionError');
    await (await producer.transaction()).commit();
    expect(made).toHaveLength(2);
    expect(producer.replaced).toBe(1);
  });

  it('disconnect ends the current producer; a later use connects a new one', async () => {
    const { made, producer } = fakeProducers({});
    await producer.ready();
    await producer.disconnect();
    expect(made[0]!.disconnected).toBe(true);
    await producer.ready();
    expect(made).toHaveLength(2);
  });

  it('a producer fenced by a newer one (after a rebalance) is replaced, and the step throws a retriable ProducerFenced', async () => {
    const { made, producer } = fakeProducers({ fencedSends: true });
    const tx = await producer.transaction();
    const failure = await tx.send({ topic: 't', messages: [] }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ProducerFenced);
    expect((failure as ProducerFenced).retriable).toBe(true);
    expect(made[0]!.disconnected).toBe(true);
    const next = await producer.transaction();
    await next.send({ topic: 't', messages: [] });
    await next.commit();
    expect(made).toHaveLength(2);
    expect(producer.replaced).toBe(1);
  });
});
