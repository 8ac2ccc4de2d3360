import type { EventCodec, EventLike } from '@meridian/events';

/**
 * The events of a fetched batch after `after` (what a read model covers already), each with its
 * position: the first step of every read-model projection (tasks, files). Undecodable records
 * change nothing there (the command consumer sends what cannot be decoded to the dead-letter topic).
 */
export function eventsAfter<E extends EventLike>(
  codec: EventCodec<E>,
  partition: number,
  messages: ReadonlyArray<{ offset: string; value: Buffer | null }>,
  after: number,
): Array<{ event: E; partition: number; offset: number }> {
  const events: Array<{ event: E; partition: number; offset: number }> = [];
  for (const message of messages) {
    const offset = Number(message.offset);
    if (offset <= after) continue;
    try {
      events.push({ event: codec.decode(message.value ?? Buffer.alloc(0)), partition, offset });
    } catch {
      // skipped: see above
    }
  }
  return events;
}
