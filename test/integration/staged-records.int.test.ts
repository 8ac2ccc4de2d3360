import { afterAll, describe, expect, it } from 'vitest';
import { STAGE_HEADER, type PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { KafkaEventLog, topicsFor, topicSpecs } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { isolatedSettings } from '../support/settings.ts';

/**
 * A staged upload's records as the log carries them: a PointBatch v2 with
 * its attempt in the `stage` field and in the meridian-stage header, and an UploadSealed v2
 * naming the share. Read back through the log port's range reader (what a seal's refill and a
 * rebuild use), the header and the fields arrive as written.
 */
describe('staged point records through the log', () => {
  const settings = isolatedSettings();
  const log = new KafkaEventLog({ brokers: settings.KAFKA_BROKERS.split(','), clientId: 'int-staged', logger: createLogger({ name: 't', level: 'silent' }) });
  const writer = log.transactional(`${settings.MERIDIAN_TOPIC_PREFIX}int-staged`);
  const topics = topicsFor(settings.MERIDIAN_TOPIC_PREFIX);
  const codec = createEventCodec<PointsFact>();
  afterAll(async () => {
    await Promise.allSettled([writer.disconnect(), log.close()]);
  });

  it('keep the stage header and fields, read by range', async () => {
    await log.prepareTopics(
      topicSpecs(topics, { pointsPartitions: 1, tasksPartitions: 1, replicationFactor: 1, minInsyncReplicas: 1, pointsRetentionMs: 3_600_000 }),
    );
    const attempt = '0123456789abcdef';
    const staged: PointsFact = { type: 'PointBatch', task_id: 't1', metric_name: 'm', updated_at: 5, timestamps: [1, 2], values: [0.5, 1.5], stage: attempt };
    const direct: PointsFact = { type: 'PointBatch', task_id: 't0', metric_name: 'm', updated_at: 4, timestamps: [3], values: [2.5] };
    const tx = await writer.transaction();
    await tx.send({
      topic: topics.points,
      acks: -1,
      messages: [
        { key: 'm', value: codec.encode(direct), partition: 0 },
        { key: 'm', value: codec.encode(staged), headers: { [STAGE_HEADER]: attempt }, partition: 0 },
      ],
    });
    const seal: PointsFact = { type: 'UploadSealed', task_id: 't1', points: 2, stage: { attempt, first_offset: 1, batches: 1 } };
    await tx.send({ topic: topics.points, acks: -1, messages: [{ key: 't1', value: codec.encode(seal), partition: 0 }] });
    await tx.commit();

    const read = [];
    for await (const batch of log.readRanges([{ topic: topics.points, partition: 0, start: 0, end: 3 }], {
      groupId: `${settings.MERIDIAN_TOPIC_PREFIX}int-staged-read`,
      sequential: true,
    }))
      read.push(...batch.messages);
    expect(read.map((m) => m.offset)).toEqual(['0', '1', '2']);
    expect(read[0]!.headers?.[STAGE_HEADER]).toBeUndefined();
    expect(String(read[1]!.headers?.[STAGE_HEADER])).toBe(attempt);
    // A batch of one metric decodes with the fields of batches of several at their defaults.
    expect(codec.decode(read[0]!.value!)).toEqual({ ...direct, stage: null, names: [], name_index: [] });
    expect(codec.decode(read[1]!.value!)).toEqual({ ...staged, names: [], name_index: [] });
    expect(codec.decode(read[2]!.value!)).toEqual(seal);
  });
});
