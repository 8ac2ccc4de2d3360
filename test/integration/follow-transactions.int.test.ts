import type { Consumer } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { createEventCodec } from '@meridian/events';
import { createKafka, createProducer, ensureTopics, TopicFollower, topicsFor, topicSpecs } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

type TaskStarted = { type: 'TaskStarted'; task_id: string; at: number };

describe('a topic follower on a log with transactions', () => {
  const settings = isolatedSettings();
  const logger = createLogger({ name: 't', level: 'silent' });
  const kafka = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: 'int-follow', logger });
  const admin = kafka.admin();
  const topics = topicsFor(settings.MERIDIAN_TOPIC_PREFIX);
  const producer = createProducer(kafka, { transactionalId: `${settings.MERIDIAN_TOPIC_PREFIX}int-follow` });
  const codec = createEventCodec<TaskStarted>();
  const followers: Array<TopicFollower<TaskStarted>> = [];
  afterAll(async () => {
    await Promise.allSettled([...followers.map((f) => f.stop()), producer.disconnect(), admin.disconnect()]);
  });

  it('catches up, and syncs to the end, when the last record of a partition is a commit or abort marker', async () => {
    await admin.connect();
    await ensureTopics(
      admin,
      topicSpecs(topics, { pointsPartitions: 1, tasksPartitions: 3, replicationFactor: 1, minInsyncReplicas: 1, pointsRetentionMs: 3_600_000 }),
    );
    await producer.connect();
    const write = async (id: string, commit: boolean) => {
      const tx = await producer.transaction();
      await tx.send({ topic: topics.files, acks: -1, messages: [{ key: id, value: codec.encode({ type: 'TaskStarted', task_id: id, at: 1 }) }] });
      await (commit ? tx.commit() : tx.abort());
    };
    await write('a', true);
    await write('b', false); // the log now ends in an abort marker after an aborted record

    const seen: string[] = [];
    const follower = new TopicFollower<TaskStarted>({
      kafka,
      admin,
      topic: topics.files,
      groupPrefix: `${settings.MERIDIAN_TOPIC_PREFIX}int-`,
      codec,
      logger,
      apply: (e) => seen.push(e.task_id),
    });
    followers.push(follower);
    await follower.start();
    await Promise.race([follower.caughtUp, new Promise((_, reject) => setTimeout(() => reject(new Error('never caught up')), 15_000))]);
    expect(seen).toEqual(['a']);

    await write('c', true);
    await follower.syncToEnd(15_000);
    expect(seen).toEqual(['a', 'c']);

    // Read again from the start (a seek to 0, as any re-read would): no event is applied twice,
    // and new ones still are.
    const consumer = (follower as unknown as { consumer: Consumer }).consumer;
    let reread = false;
    consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload }) => {
      if (payload.topic === topics.files && Number(payload.firstOffset) === 0) reread = true;
    });
    consumer.seek({ topic: topics.files, partition: 0, offset: '0' });
    await waitFor('the follower to read the topic from the start again', () => (reread ? true : undefined), 15_000);
    await write('d', true);
    await follower.syncToEnd(15_000);
    expect(seen).toEqual(['a', 'c', 'd']);
  });

  it("starts where it is told (a snapshot's next offsets), and a rejoin of its group resumes there, not at offset 0", async () => {
    await admin.connect();
    await ensureTopics(
      admin,
      topicSpecs(topics, { pointsPartitions: 1, tasksPartitions: 3, replicationFactor: 1, minInsyncReplicas: 1, pointsRetentionMs: 3_600_000 }),
    );
    await producer.connect();
    const tx = await producer.transaction();
    await tx.send({
      topic: topics.accounts,
      acks: -1,
      messages: ['a', 'b', 'c', 'd'].map((id) => ({ key: id, value: codec.encode({ type: 'TaskStarted', task_id: id, at: 1 }) })),
    });
    await tx.commit(); // offsets 0-3, the marker at 4
    // The end a read-committed client is told can lag the commit marker for a moment.
    await waitFor('the commit to show in the end offset', async () =>
      Number((await admin.fetchTopicOffsets(topics.accounts))[0]!.high) === 5 ? true : undefined,
    );

    const seen: string[] = [];
    const follower = new TopicFollower<TaskStarted>({
      kafka,
      admin,
      topic: topics.accounts,
      groupPrefix: `${settings.MERIDIAN_TOPIC_PREFIX}int-`,
      codec,
      logger,
      apply: (e) => seen.push(e.task_id),
    });
    followers.push(follower);
    const consumer = (follower as unknown as { consumer: Consumer }).consumer;
    const firstOffsets: number[] = [];
    consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload }) => firstOffsets.push(Number(payload.firstOffset)));
    await follower.start(new Map([[0, 2]]));
    await Promise.race([follower.caughtUp, new Promise((_, reject) => setTimeout(() => reject(new Error('never caught up')), 15_000))]);
    expect(seen).toEqual(['c', 'd']);
    expect(follower.nextOffsets()).toEqual(new Map([[0, 5]]));
    expect(Math.min(...firstOffsets)).toBe(2);
    expect(follower.readAtStart).toBe(2);
    firstOffsets.length = 0;

    // Another member joins the follower's group and leaves: the follower rejoins twice.
    const { groupId } = await consumer.describeGroup();
    const intruder = kafka.consumer({ groupId, sessionTimeout: 10_000 });
    let joins = 0;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joins++;
    });
    await intruder.connect();
    await intruder.subscribe({ topic: topics.accounts, fromBeginning: true });
    await intruder.run({ autoCommit: false, eachMessage: async () => undefined });
    await waitFor('the follower to rejoin', () => (joins >= 1 ? true : undefined), 60_000);
    await intruder.disconnect();
    await waitFor('the follower to rejoin alone', () => (joins >= 2 ? true : undefined), 60_000);
    await write2(producer, topics.accounts, codec, 'e'); // offset 5, its marker at 6
    // syncToEnd follows the stable end (kafkajs' admin reads it read-committed): a commit whose
    // marker is not written yet is not part of it, so wait for the marker as above.
    await waitFor('the second commit to show in the end offset', async () =>
      Number((await admin.fetchTopicOffsets(topics.accounts))[0]!.high) === 7 ? true : undefined,
    );
    await follower.syncToEnd(15_000);
    expect(seen).toEqual(['c', 'd', 'e']);
    // After the rejoins no record already applied is fetched again (kafkajs may fetch the commit
    // marker at 4 once more after its batch: it does not move past control records itself).
    expect(firstOffsets.length).toBeGreaterThan(0);
    expect(firstOffsets.filter((o) => o < 4)).toEqual([]);
  });
});

async function write2(
  producer: ReturnType<typeof createProducer>,
  topic: string,
  codec: ReturnType<typeof createEventCodec<TaskStarted>>,
  id: string,
): Promise<void> {
  const tx = await producer.transaction();
  await tx.send({ topic, acks: -1, messages: [{ key: id, value: codec.encode({ type: 'TaskStarted', task_id: id, at: 1 }) }] });
  await tx.commit();
}
