import type { LogMessage, LogWriter, Position } from '@meridian/domain';
import type { EventCodec, EventLike } from '@meridian/events';

/** An event as a record: under its key, encoded, its type in a header (readable without decoding). */
export function eventMessage<E extends EventLike>(codec: EventCodec<E>, key: string, event: E): LogMessage {
  return { key, value: codec.encode(event), headers: { type: event.type } };
}

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
    messages: events.map((e) => eventMessage(codec, key, e)),
  });
  if (!meta || meta.baseOffset === undefined) throw new Error(`no acknowledgement for ${topic}`);
  return { partition: meta.partition, offset: Number(meta.baseOffset) + events.length - 1 };
}
