import type { LogWriter } from '@meridian/domain';

/** Where a message came from, and why it is being set aside. */
export type Rejected = {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Buffer | string | null;
  readonly value: Buffer | null;
  readonly reason: string;
};

/**
 * Copies a message no handler can process to the dead-letter topic as it was read: its key and
 * value byte-exact (never decoded and encoded again, so what could not be processed is kept
 * whatever the codec makes of it), with headers naming its source (topic, partition, offset)
 * and the reason. The one way every part of the worker (the commands consumer for every
 * handler, the projector) sets a message aside; resolves once Kafka has acknowledged it.
 */
export async function sendToDeadLetter(producer: LogWriter, deadLetterTopic: string, rejected: Rejected): Promise<void> {
  await producer.send({
    topic: deadLetterTopic,
    acks: -1,
    messages: [
      {
        key: rejected.key,
        value: rejected.value,
        headers: {
          source_topic: rejected.topic,
          source_partition: String(rejected.partition),
          source_offset: String(rejected.offset),
          reason: rejected.reason,
        },
      },
    ],
  });
}
