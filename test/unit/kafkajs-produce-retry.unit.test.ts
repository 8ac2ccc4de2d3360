import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The produce path patched by patches/kafkajs+2.2.4.patch (sendMessages), driven as kafkajs'
// producer drives it, against brokers whose answers and leaders each test scripts.
const require = createRequire(import.meta.url);
type Message = { partition: number; value: string };
type TopicData = { topic: string; partitions: { partition: number; firstSequence: number; messages: Message[] }[] };
type SendMessages = (o: {
  acks: number;
  timeout: number;
  topicMessages: { topic: string; messages: Message[] }[];
}) => Promise<Array<{ topicName: string; partition: number; baseOffset: string }>>;
const createSendMessages = require('kafkajs/src/producer/sendMessages.js') as (options: object) => SendMessages;
const createRetry = require('kafkajs/src/retry/index.js') as (options: object) => unknown;
const { createErrorFromCode } = require('kafkajs/src/protocol/error.js') as { createErrorFromCode(code: number): Error };
const NOT_LEADER_FOR_PARTITION = 6;

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * Brokers 1 and 2; `leaders` gives each topic-partition's leader, and is replaced by `after`
 * when the producer asks for metadata again. Broker 2 refuses its first request as not the
 * leader; broker 1 answers after `broker1DelayMs`. Every produce request each broker received is kept.
 */
function world(leaders: Record<string, number>, after: Record<string, number>, broker1DelayMs = 0) {
  let current = leaders;
  const received: Array<{ broker: number; topic: string; partition: number; firstSequence: number; values: string[] }> = [];
  let refusals = 1;
  const offsets = new Map<string, number>();
  const broker = (nodeId: number) => ({
    nodeId,
    produce: async ({ topicData }: { topicData: TopicData[] }) => {
      await new Promise((r) => setTimeout(r, nodeId === 1 ? broker1DelayMs : 0));
      for (const { topic, partitions } of topicData)
        for (const p of partitions)
          received.push({ broker: nodeId, topic, partition: Number(p.partition), firstSequence: p.firstSequence, values: p.messages.map((m) => m.value) });
      if (nodeId === 2 && refusals-- > 0) throw createErrorFromCode(NOT_LEADER_FOR_PARTITION);
      return {
        topics: topicData.map(({ topic, partitions }) => ({
          topicName: topic,
          partitions: partitions.map(({ partition, messages }) => {
            const key = `${topic}/${partition}`;
            const base = offsets.get(key) ?? 0;
            offsets.set(key, base + messages.length);
            return { partition, errorCode: 0, baseOffset: String(base), logAppendTime: '-1', logStartOffset: '0' };
          }),
        })),
      };
    },
  });
  const brokers = new Map([1, 2].map((id) => [id, broker(id)]));
  const cluster = {
    targetTopics: new Set<string>(),
    addMultipleTargetTopics: async () => undefined,
    refreshMetadataIfNecessary: async () => undefined,
    refreshMetadata: async () => {
      current = after;
    },
    isConnected: () => true,
    removeBroker: () => undefined,
    findTopicPartitionMetadata: (topic: string) =>
      Object.keys(current)
        .filter((k) => k.startsWith(`${topic}/`))
        .map((k) => ({ partitionId: Number(k.split('/')[1]), leader: current[k] })),
    findLeaderForPartitions: (topic: string, partitions: Array<number | string>) => {
      const byLeader: Record<string, Array<number | string>> = {};
      for (const p of partitions) (byLeader[current[`${topic}/${p}`]!] ??= []).push(p);
      return byLeader;
    },
    findBroker: async ({ nodeId }: { nodeId: number | string }) => brokers.get(Number(nodeId))!,
  };
  const sequences = new Map<string, number>();
  const eosManager = {
    isTransactional: () => false,
    acquireBrokerLock: async () => undefined,
    releaseBrokerLock: async () => undefined,
    getSequence: (topic: string, partition: number) => sequences.get(`${topic}/${partition}`) ?? 0,
    updateSequence: (topic: string, partition: number, n: number) => sequences.set(`${topic}/${partition}`, (sequences.get(`${topic}/${partition}`) ?? 0) + n),
    getProducerId: () => 7,
    getProducerEpoch: () => 0,
    getTransactionalId: () => undefined,
  };
  const send = createSendMessages({
    logger: silent,
    cluster,
    partitioner: ({ message }: { message: Message }) => message.partition,
    eosManager,
    retrier: createRetry({ retries: 3, initialRetryTime: 1, maxRetryTime: 5 }),
  });
  return { send, received };
}

const topicMessages = [
  { topic: 'points', messages: [{ partition: 0, value: 'batch' }] },
  { topic: 'tasks', messages: [{ partition: 1, value: 'parsed' }] },
];

describe('kafkajs produce retries (patched)', () => {
  it('never sends again a partition a broker acknowledged, when its leader moved before the retry', async () => {
    // points/0 on broker 1 is acknowledged; tasks/1 on broker 2 is refused; then the leaders swap.
    const { send, received } = world({ 'points/0': 1, 'tasks/1': 2 }, { 'points/0': 2, 'tasks/1': 1 });
    const answers = await send({ acks: -1, timeout: 1000, topicMessages });
    // Unpatched, the retry sent points/0 again to its new leader with the next sequence (appended
    // twice) and never sent tasks/1, whose new leader had already answered.
    expect(received.filter((r) => r.topic === 'points')).toEqual([{ broker: 1, topic: 'points', partition: 0, firstSequence: 0, values: ['batch'] }]);
    expect(received.filter((r) => r.topic === 'tasks')).toEqual([
      { broker: 2, topic: 'tasks', partition: 1, firstSequence: 0, values: ['parsed'] },
      { broker: 1, topic: 'tasks', partition: 1, firstSequence: 0, values: ['parsed'] },
    ]);
    expect(answers.map((a) => `${a.topicName}/${a.partition}@${a.baseOffset}`).sort()).toEqual(['points/0@0', 'tasks/1@0']);
  });

  it('sends a refused partition again with its sequence, to the same leader when it did not move', async () => {
    const { send, received } = world({ 'points/0': 1, 'tasks/1': 2 }, { 'points/0': 1, 'tasks/1': 2 });
    await send({ acks: -1, timeout: 1000, topicMessages });
    expect(received.map((r) => `${r.broker}:${r.topic}/${r.partition}#${r.firstSequence}`)).toEqual(['1:points/0#0', '2:tasks/1#0', '2:tasks/1#0']);
  });

  it('lets a request under way settle before the retry, so what it delivers is not sent again', async () => {
    // Broker 2 refuses at once while broker 1 is still answering for points/0.
    const { send, received } = world({ 'points/0': 1, 'tasks/1': 2 }, { 'points/0': 1, 'tasks/1': 2 }, 30);
    await send({ acks: -1, timeout: 1000, topicMessages });
    // Unpatched (or with the try's requests awaited with Promise.all), the retry sent points/0 again while its first answer was on its way.
    expect(received.map((r) => `${r.broker}:${r.topic}/${r.partition}#${r.firstSequence}`)).toEqual(['2:tasks/1#0', '1:points/0#0', '2:tasks/1#0']);
  });
});
