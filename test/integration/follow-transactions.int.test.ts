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
    await ensureTopics(admin, topicSpecs(topics, 1, 3));
    await producer.connect();
    const write = async (id: string, commit: boolean) => {
      const tx = await producer.transaction();
      await tx.send({ topic: topics.files, acks: -1, messages: [{ key: id, value: codec.encode({ type: 'TaskStarted', task_id: id, at: 1 }) }] });
      await (commit ? tx.commit() : tx.abort());
    };
    await write('a', true);
    await write('b', false); // the log now ends in an abort marker after an aborted record

    const seen: string[] = [];
    const follower = new TopicFollower<TaskStarted>({ kafka, admin, topic: topics.files, groupPrefix: `${settings.MERIDIAN_TOPIC_PREFIX}int-`, codec, logger, apply: (e) => seen.push(e.task_id) });
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
});
