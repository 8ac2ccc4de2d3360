import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createEventCodec } from '@meridian/events';
import type { Producer } from 'kafkajs';
import { createKafka, createProducer, ensureTopics, KafkaEventLog, LOG_COMPRESSIONS, topicsFor, topicSpecs, ZSTD_SYNC_MAX_BYTES } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

type UserCreated = { type: 'UserCreated'; user_name: string; is_admin: boolean; key_id: string; secret_sha256: Buffer; at: number; actor: string };

describe('Kafka adapter against a real broker', () => {
  const settings = isolatedSettings();
  const kafka = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: 'int-test', logger: createLogger({ name: 't', level: 'silent' }) });
  const admin = kafka.admin();
  const producer = createProducer(kafka);
  const consumer = kafka.consumer({ groupId: `${settings.MERIDIAN_TOPIC_PREFIX}int` });
  const topics = topicsFor(settings.MERIDIAN_TOPIC_PREFIX);
  afterAll(async () => {
    await Promise.allSettled([producer.disconnect(), consumer.disconnect(), admin.disconnect()]);
  });

  /** The single-node defaults of the settings. */
  const layout = {
    pointsPartitions: settings.KAFKA_POINTS_PARTITIONS,
    tasksPartitions: settings.KAFKA_TASKS_PARTITIONS,
    replicationFactor: settings.KAFKA_REPLICATION_FACTOR,
    minInsyncReplicas: settings.KAFKA_MIN_INSYNC_REPLICAS,
    pointsRetentionMs: settings.MERIDIAN_ARCHIVE_RETENTION_MS,
  };

  it('creates the topics with infinite retention, idempotently', async () => {
    await admin.connect();
    expect(await ensureTopics(admin, topicSpecs(topics, layout))).toEqual([]);
    expect(await ensureTopics(admin, topicSpecs(topics, layout))).toEqual([]);
    const configs = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: topics.accounts }] });
    const retention = configs.resources[0]!.configEntries.find((e) => e.configName === 'retention.ms');
    expect(retention?.configValue).toBe('-1');
    const meta = await admin.fetchTopicMetadata({ topics: [topics.points] });
    expect(meta.topics[0]!.partitions).toHaveLength(3);
  });

  it('creates every topic with the replication factor and min.insync.replicas of the settings (single-node defaults: 1 and 1)', async () => {
    await admin.connect();
    const names = Object.values(topics);
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type: 2, name, configNames: ['min.insync.replicas'] })),
    });
    const meta = await admin.fetchTopicMetadata({ topics: names });
    for (const name of names) {
      const minInsync = configs.resources.find((r) => r.resourceName === name)!.configEntries.find((e) => e.configName === 'min.insync.replicas')!;
      // Set on the topic itself (not inherited from the broker), so a cluster's broker default cannot change it.
      expect({ name, value: minInsync.configValue, isDefault: minInsync.isDefault }).toEqual({ name, value: '1', isDefault: false });
      const partitions = meta.topics.find((t) => t.name === name)!.partitions;
      expect(partitions.length, name).toBeGreaterThan(0);
      for (const p of partitions) expect(p.replicas, name).toHaveLength(1);
    }
  });

  it("creates the points topic with segments of a tenth of the brokers' window, set on the topic; the other topics keep the broker's", async () => {
    await admin.connect();
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [topics.points, topics.tasks].map((name) => ({ type: 2, name, configNames: ['segment.ms'] })),
    });
    const segmentMs = (name: string) => configs.resources.find((r) => r.resourceName === name)!.configEntries.find((e) => e.configName === 'segment.ms')!;
    // The default window is 7 days: segments of 16.8 hours, not the broker's 7 days.
    expect(settings.MERIDIAN_ARCHIVE_RETENTION_MS).toBe(7 * 86_400_000);
    expect({ value: segmentMs(topics.points).configValue, isDefault: segmentMs(topics.points).isDefault }).toEqual({ value: '60480000', isDefault: false });
    expect(segmentMs(topics.tasks).isDefault).toBe(true);
    // An existing points topic with other segments is kept, and the difference reported.
    const shorter = await ensureTopics(admin, topicSpecs(topics, { ...layout, pointsRetentionMs: 86_400_000 }));
    expect(shorter).toEqual([{ topic: topics.points, property: 'segment.ms', actual: 60_480_000, wanted: 8_640_000 }]);
  });

  it('keeps an existing topic with fewer partitions or another replication than asked, and reports each difference', async () => {
    await admin.connect();
    const mismatches = await ensureTopics(admin, topicSpecs(topics, { ...layout, tasksPartitions: 5, replicationFactor: 3, minInsyncReplicas: 2 }));
    expect(mismatches).toHaveLength(Object.keys(topics).length * 2 + 1);
    expect(mismatches).toContainEqual({ topic: topics.tasks, property: 'partitions', actual: 3, wanted: 5 });
    for (const topic of Object.values(topics)) {
      expect(mismatches).toContainEqual({ topic, property: 'replication factor', actual: 1, wanted: 3 });
      expect(mismatches).toContainEqual({ topic, property: 'min.insync.replicas', actual: 1, wanted: 2 });
    }
    const meta = await admin.fetchTopicMetadata({ topics: [topics.tasks] });
    expect(meta.topics[0]!.partitions).toHaveLength(3);
    expect(meta.topics[0]!.partitions[0]!.replicas).toHaveLength(1);
  });

  it('produces an Avro event with the idempotent producer and consumes it back', async () => {
    const codec = createEventCodec<UserCreated>();
    const event: UserCreated = {
      type: 'UserCreated',
      user_name: 'ada',
      is_admin: true,
      key_id: '0123456789abcdef',
      secret_sha256: Buffer.alloc(32, 7),
      at: 1_700_000_000_123,
      actor: 'cli',
    };
    await producer.connect();
    await producer.send({ topic: topics.accounts, acks: -1, messages: [{ key: event.user_name, value: codec.encode(event) }] });

    const received: UserCreated[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic: topics.accounts, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        received.push(codec.decode(message.value!));
      },
    });
    await waitFor('the event to come back', () => (received.length > 0 ? received : undefined), 30_000);
    expect(received).toEqual([event]);
  });
});

describe('compressed record batches against a real broker', () => {
  const settings = isolatedSettings();
  const kafka = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: 'int-compression', logger: createLogger({ name: 't', level: 'silent' }) });
  const admin = kafka.admin();
  afterAll(() => admin.disconnect());

  it.each(LOG_COMPRESSIONS)('writes with %s, plain and in a transaction, and reads every record back', async (compression) => {
    const topic = `${settings.MERIDIAN_TOPIC_PREFIX}compressed-${compression}`;
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    const plain = createProducer(kafka, { compression });
    const transactional = createProducer(kafka, { compression, transactionalId: `${topic}-tx` });
    const consumer = kafka.consumer({ groupId: `${topic}-reader` });
    try {
      // The first batch is small; the second carries 600 hex characters a record (about 300 KB, half
      // of it left after compression), so zstd meets both ways: on the calling thread and on libuv's pool.
      const padding = Array.from({ length: 1000 }, () => randomBytes(300).toString('hex'));
      const messages = (from: number) =>
        Array.from({ length: 500 }, (_, i) => ({
          key: 'k',
          value: Buffer.from(`point ${from + i} of a batch that compresses${from > 0 ? padding[from + i] : ''}`),
        }));
      expect(messages(500).reduce((n, m) => n + m.value.length, 0)).toBeGreaterThan(2 * ZSTD_SYNC_MAX_BYTES);
      await plain.connect();
      await plain.send({ topic, acks: -1, messages: messages(0) });
      await transactional.connect();
      const tx = await transactional.transaction();
      await tx.sendBatch({ acks: -1, topicMessages: [{ topic, messages: messages(500) }] });
      await tx.commit();
      const received: string[] = [];
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          received.push(message.value!.toString());
        },
      });
      await waitFor('every record to come back', () => (received.length >= 1000 ? received : undefined), 30_000);
      expect(received).toEqual([...messages(0), ...messages(500)].map((m) => m.value.toString()));
    } finally {
      await Promise.allSettled([plain.disconnect(), transactional.disconnect(), consumer.disconnect()]);
    }
  });
});

/**
 * A transaction left open by a crashed producer is aborted when its successor fences it, so its
 * abort marker lands after transactions that started later. The broker lists aborted
 * transactions in marker order; kafkajs 2.2.4 assumed first-offset order and delivered the
 * crashed producer's records to read_committed consumers (patches/kafkajs+2.2.4.patch).
 */
describe('read_committed consumers against a real broker', () => {
  const settings = isolatedSettings();
  const kafka = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: 'int-test-tx', logger: createLogger({ name: 't', level: 'silent' }) });
  const topic = `${settings.MERIDIAN_TOPIC_PREFIX}tx-order`;
  const admin = kafka.admin();
  const crashed = createProducer(kafka, { transactionalId: `${topic}-a` });
  const successor = createProducer(kafka, { transactionalId: `${topic}-a` });
  const other = createProducer(kafka, { transactionalId: `${topic}-b` });
  const plain = createProducer(kafka);
  const consumer = kafka.consumer({ groupId: `${topic}-reader`, readUncommitted: false });
  afterAll(async () => {
    await Promise.allSettled([crashed, successor, other, plain, consumer, admin].map((c) => c.disconnect()));
  });

  it('never delivers a fenced transaction, even when its abort marker follows later transactions', async () => {
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: -1 }] });
    const send = async (tx: { send: Producer['send'] }, value: string) => tx.send({ topic, acks: -1, messages: [{ partition: 0, value }] });

    await crashed.connect();
    const open = await crashed.transaction();
    await send(open, 'crashed-open'); // offset 0, its transaction never ends on its own

    await other.connect();
    const aborted = await other.transaction();
    await send(aborted, 'other-aborted');
    await aborted.abort();
    const committed = await other.transaction();
    await send(committed, 'other-committed');
    await committed.commit();

    // The same transactional id: its first transaction fences `crashed` and aborts the open one.
    await successor.connect();
    await (await successor.transaction()).abort();
    await plain.connect();
    await send(plain, 'end');

    const received: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        received.push(message.value!.toString());
      },
    });
    await waitFor('the last message', () => (received.includes('end') ? received : undefined), 30_000);
    expect(received).toEqual(['other-committed', 'end']);
  });
});

/**
 * What a transaction of the log costs in round trips (a 10k-point JSON upload was
 * 13 sequential requests in its transaction). Records of two topics go in one produce request
 * (LogTransaction.sendAll), and the coordinators are asked for once per producer, not before
 * every transactional request (patches/kafkajs+2.2.4.patch; kafkajs 2.2.4 asked 4 times per
 * transaction).
 */
describe('a transaction of the log against a real broker', () => {
  const settings = isolatedSettings();
  const log = new KafkaEventLog({
    brokers: settings.KAFKA_BROKERS.split(','),
    clientId: 'int-test-tx-requests',
    logger: createLogger({ name: 't', level: 'silent' }),
  });
  const points = `${settings.MERIDIAN_TOPIC_PREFIX}tx-points`;
  const tasks = `${settings.MERIDIAN_TOPIC_PREFIX}tx-tasks`;
  const group = `${settings.MERIDIAN_TOPIC_PREFIX}tx-commands`;
  const requests: string[] = [];
  // Every request of the transactional producer the log makes, by its API name.
  const producerOf = log.kafka.producer.bind(log.kafka);
  log.kafka.producer = (options) => {
    const p = producerOf(options);
    p.on(p.events.REQUEST, (e) => requests.push(e.payload.apiName));
    return p;
  };
  const transactional = log.transactional(`${settings.MERIDIAN_TOPIC_PREFIX}tx-requests`);
  const consumer = log.kafka.consumer({ groupId: `${settings.MERIDIAN_TOPIC_PREFIX}tx-reader`, readUncommitted: false });
  afterAll(async () => {
    await Promise.allSettled([transactional.disconnect(), consumer.disconnect(), log.admin.disconnect()]);
  });

  it('sends two topics in one produce request and asks for its coordinators once, not per transaction; all of it commits', async () => {
    await log.admin.connect();
    await log.admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: points, numPartitions: 3, replicationFactor: -1 },
        { topic: tasks, numPartitions: 1, replicationFactor: -1 },
      ],
    });
    await transactional.connect();
    const acks = [];
    for (let i = 0; i < 3; i++) {
      const tx = await transactional.transaction();
      acks.push(
        await tx.sendAll([
          {
            topic: points,
            acks: -1,
            messages: [
              { key: 'm', value: Buffer.from(`batch ${i}`), partition: 0 },
              { key: 'm', value: Buffer.from(`seal ${i}`), partition: 0 },
              { key: 'n', value: Buffer.from(`seal ${i}`), partition: 2 },
            ],
          },
          { topic: tasks, acks: -1, messages: [{ key: 't', value: Buffer.from(`parsed ${i}`) }] },
        ]),
      );
      await tx.commitConsumed(group, { topic: tasks, partition: 0, offset: i });
      await tx.commit();
    }
    const count = (api: string) => requests.filter((r) => r === api).length;
    // One produce request per transaction for both topics (an AddPartitionsToTxn may be retried: the broker answers
    // CONCURRENT_TRANSACTIONS while the last commit's markers are still being written).
    expect({ produce: count('Produce'), endTxn: count('EndTxn') }).toEqual({ produce: 3, endTxn: 3 });
    // The transaction coordinator at connect (InitProducerId) and for the first transaction, the group's once: 3 when
    // nothing is retried (kafkajs unpatched asks 4 times per transaction: 13 in all), never more than 2 per transaction.
    expect(count('GroupCoordinator')).toBeLessThanOrEqual(6);
    // Each earlier transaction left a record and its commit marker in a partition.
    expect(acks[2]!.map((a) => [a.topic, a.partition, a.baseOffset]).sort()).toEqual(
      [
        [points, 0, '6'],
        [points, 2, '4'],
        [tasks, 0, '4'],
      ].sort(),
    );

    const received: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topics: [points, tasks], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        received.push(`${topic === tasks ? 'tasks' : 'points'}/${partition} ${message.value!.toString()}`);
      },
    });
    await waitFor('every record', () => (received.length === 12 ? received : undefined), 30_000);
    expect(received.filter((r) => r.startsWith('points/0'))).toEqual([
      'points/0 batch 0',
      'points/0 seal 0',
      'points/0 batch 1',
      'points/0 seal 1',
      'points/0 batch 2',
      'points/0 seal 2',
    ]);
    expect(received.filter((r) => r.startsWith('tasks/0'))).toEqual(['tasks/0 parsed 0', 'tasks/0 parsed 1', 'tasks/0 parsed 2']);
    const [committed] = await log.admin.fetchOffsets({ groupId: group, topics: [tasks] });
    expect(committed!.partitions).toEqual([{ partition: 0, offset: '3', metadata: null }]);
  });
});

describe('the end offsets of a topic against a real broker', () => {
  const settings = isolatedSettings();
  const log = new KafkaEventLog({
    brokers: settings.KAFKA_BROKERS.split(','),
    clientId: 'int-test-end-offsets',
    logger: createLogger({ name: 't', level: 'silent' }),
  });
  const topic = `${settings.MERIDIAN_TOPIC_PREFIX}ends`;
  const later = `${settings.MERIDIAN_TOPIC_PREFIX}ends-later`;
  const producer = createProducer(log.kafka);
  afterAll(async () => {
    await Promise.allSettled([producer.disconnect(), log.close()]);
  });

  it('reads the latest offsets with one request each, its metadata asked once, and finds a topic made after', async () => {
    await log.admin.connect();
    await log.admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 3, replicationFactor: -1 }] });
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: [
        { value: 'a', partition: 0 },
        { value: 'b', partition: 0 },
        { value: 'c', partition: 2 },
      ],
    });
    expect(await log.endOffsets(topic)).toEqual(
      new Map([
        [0, 2],
        [1, 0],
        [2, 1],
      ]),
    );

    const requests: string[] = [];
    const off = log.admin.on(log.admin.events.REQUEST, (e) => requests.push(e.payload.apiName));
    for (let i = 0; i < 5; i++) {
      await producer.send({ topic, acks: -1, messages: [{ value: `d${i}`, partition: 1 }] });
      // Fresh every time: the end follows each acknowledged record.
      expect((await log.endOffsets(topic)).get(1)).toBe(i + 1);
    }
    off();
    // kafkajs' fetchTopicOffsets sends Metadata and two ListOffsets per call (15 here).
    expect(requests).toEqual(Array(5).fill('ListOffsets'));
    // The same ends as kafkajs' own call.
    expect(new Map((await log.admin.fetchTopicOffsets(topic)).map((r) => [r.partition, Number(r.high)]))).toEqual(await log.endOffsets(topic));

    await log.admin.createTopics({ waitForLeaders: true, topics: [{ topic: later, numPartitions: 2, replicationFactor: -1 }] });
    await producer.send({ topic: later, acks: -1, messages: [{ value: 'e', partition: 1 }] });
    expect(await log.endOffsets(later)).toEqual(
      new Map([
        [0, 0],
        [1, 1],
      ]),
    );
  });

  it("answers the readiness probe for one topic, a topic not made yet included, and leaves the admin's metadata of the others whole", async () => {
    const probed = `${settings.MERIDIAN_TOPIC_PREFIX}ends-probed`;
    await log.admin.connect();
    await log.admin.createTopics({ waitForLeaders: true, topics: [{ topic: probed, numPartitions: 1, replicationFactor: -1 }] });
    const before = await log.endOffsets(topic);
    await log.ping(probed, 5_000);
    await log.ping(`${settings.MERIDIAN_TOPIC_PREFIX}not-made-yet`, 5_000);
    const requests: string[] = [];
    const off = log.admin.on(log.admin.events.REQUEST, (e) => requests.push(e.payload.apiName));
    // Asked of the process's admin, a probe for one topic would have replaced its metadata with that topic's:
    // this read would then find no partitions, and ask for Metadata again.
    expect(await log.endOffsets(topic)).toEqual(before);
    off();
    expect(requests).toEqual(['ListOffsets']);
  });

  it('fails the readiness probe within its timeout when no broker answers', async () => {
    const nowhere = new KafkaEventLog({ brokers: ['127.0.0.1:1'], clientId: 'int-test-probe', logger: createLogger({ name: 't', level: 'silent' }) });
    const started = performance.now();
    try {
      await expect(nowhere.ping('anything', 1_000)).rejects.toThrow();
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await nowhere.close();
    }
  });
});
