import type { LogWriter, Position } from '@meridian/domain';
import type { EventCodec, EventLike } from '@meridian/events';

/**
 * Appends events to one topic under one key, in order, and resolves only once Kafka has
 * acknowledged them from all in-sync replicas. Returns the position of the last one.
 */
export async function appendEvents<E extends EventLike>(
  producer: LogWriter,
  codec: EventCodec<E>,
  topic: string,
  key: string,
  events: readonly E[],
): Promise<Position | null> {
  if (events.length === 0) return null;
  const [meta] = await producer.send({
    topic,
    acks: -1,
    messages: events.map((e) => ({ key, value: codec.encode(e), headers: { type: e.type } })),
  });
  if (!meta || meta.baseOffset === undefined) throw new Error(`no acknowledgement for ${topic}`);
  return { partition: meta.partition, offset: Number(meta.baseOffset) + events.length - 1 };
}
