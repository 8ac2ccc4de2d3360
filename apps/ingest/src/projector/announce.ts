import type { LogWriter, TaskEvent, UploadSegmentProjected } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { eventMessage } from '@meridian/kafka';
import type { Seal } from '@meridian/projection';

/**
 * Tells the tasks topic that every point of an upload in a points partition is queryable:
 * one UploadSegmentProjected per seal, keyed by task id (in seal order within a task), all in one request.
 * Called only after the rows before each seal are in ClickHouse.
 */
export async function announceProjected(
  producer: LogWriter,
  codec: EventCodec<TaskEvent>,
  tasksTopic: string,
  seals: readonly Seal[],
  now: () => number = Date.now,
): Promise<void> {
  const byTask = new Map<string, UploadSegmentProjected[]>();
  for (const seal of seals) {
    const events = byTask.get(seal.task_id) ?? [];
    if (!events.some((e) => e.partition === seal.partition)) {
      events.push({ type: 'UploadSegmentProjected', task_id: seal.task_id, partition: seal.partition, at: now() });
    }
    byTask.set(seal.task_id, events);
  }
  // One request for every task's events (a fetched batch often seals several small uploads): each is keyed by its task, so a task's stay in order.
  const messages = [...byTask].flatMap(([taskId, events]) => events.map((e) => eventMessage(codec, taskId, e)));
  if (messages.length > 0) await producer.send({ topic: tasksTopic, acks: -1, messages });
}
