import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The transaction manager patched by patches/kafkajs+2.2.4.patch, driven as kafkajs' producer
// drives it, against a coordinator whose answers each test scripts.
const require = createRequire(import.meta.url);
type EosManager = {
  initProducerId(): Promise<void>;
  beginTransaction(): void;
  addPartitionsToTransaction(topics: { topic: string; partitions: { partition: number }[] }[]): Promise<void>;
  sendOffsets(offsets: { consumerGroupId: string; topics: { topic: string; partitions: { partition: number; offset: string }[] }[] }): Promise<void>;
};
const createEosManager = require('kafkajs/src/producer/eosManager/index.js') as (options: object) => EosManager;
const { createErrorFromCode } = require('kafkajs/src/protocol/error.js') as { createErrorFromCode(code: number): Error & { type: string } };
const CONCURRENT_TRANSACTIONS = 51;
const INVALID_PRODUCER_EPOCH = 47;

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A coordinator whose AddPartitionsToTxn and AddOffsetsToTxn answer with `errors` in turn, then succeed. */
function coordinator(errors: number[]) {
  const calls = { addPartitionsToTxn: 0, addOffsetsToTxn: 0, txnOffsetCommit: 0 };
  const answer = (name: 'addPartitionsToTxn' | 'addOffsetsToTxn') => async () => {
    calls[name]++;
    const code = errors.shift();
    if (code !== undefined) throw createErrorFromCode(code);
  };
  const broker = {
    nodeId: 1,
    initProducerId: async () => ({ producerId: 7, producerEpoch: 0 }),
    addPartitionsToTxn: answer('addPartitionsToTxn'),
    addOffsetsToTxn: answer('addOffsetsToTxn'),
    txnOffsetCommit: async () => {
      calls.txnOffsetCommit++;
    },
  };
  const cluster = {
    retry: { retries: 0 },
    refreshMetadataIfNecessary: async () => undefined,
    findGroupCoordinator: async () => broker,
    findBroker: async () => broker,
  };
  return { calls, cluster };
}

async function transacting(errors: number[]) {
  const { calls, cluster } = coordinator(errors);
  const eos = createEosManager({ logger: silent, cluster, transactional: true, transactionalId: 'meridian-test' });
  await eos.initProducerId();
  eos.beginTransaction();
  return { eos, calls };
}

const offsets = { consumerGroupId: 'g', topics: [{ topic: 'tasks', partitions: [{ partition: 0, offset: '1' }] }] };

describe('kafkajs transactions while the previous one is still being completed (patched)', () => {
  it('sends AddOffsetsToTxn again after CONCURRENT_TRANSACTIONS instead of failing the transaction', async () => {
    const { eos, calls } = await transacting([CONCURRENT_TRANSACTIONS, CONCURRENT_TRANSACTIONS]);
    await eos.sendOffsets(offsets);
    expect(calls).toEqual({ addPartitionsToTxn: 0, addOffsetsToTxn: 3, txnOffsetCommit: 1 });
  });

  it('sends AddPartitionsToTxn again after CONCURRENT_TRANSACTIONS', async () => {
    const { eos, calls } = await transacting([CONCURRENT_TRANSACTIONS]);
    await eos.addPartitionsToTransaction([{ topic: 'points', partitions: [{ partition: 0 }] }]);
    expect(calls.addPartitionsToTxn).toBe(2);
  });

  it('throws any other answer at once, as before', async () => {
    const { eos, calls } = await transacting([INVALID_PRODUCER_EPOCH]);
    await expect(eos.sendOffsets(offsets)).rejects.toMatchObject({ type: 'INVALID_PRODUCER_EPOCH' });
    expect(calls.addOffsetsToTxn).toBe(1);
  });

  it('gives up after about 2.6 s of CONCURRENT_TRANSACTIONS and throws it', async () => {
    const { eos, calls } = await transacting(Array.from({ length: 20 }, () => CONCURRENT_TRANSACTIONS));
    const started = performance.now();
    await expect(eos.sendOffsets(offsets)).rejects.toMatchObject({ type: 'CONCURRENT_TRANSACTIONS' });
    expect(calls.addOffsetsToTxn).toBe(12);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2_500);
  });
});
