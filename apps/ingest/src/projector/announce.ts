import type { LogWriter, TaskEvent, UploadSegmentProjected } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import type { Seal } from '@meridian/projection';

/**
 * Tells the tasks topic that every point of an upload in a points partition is queryable:
 * one UploadSegmentProjected per seal, keyed by task id (in seal order within a task).
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
  await Promise.all([...byTask].map(([taskId, events]) => appendEvents(producer, codec, tasksTopic, taskId, events)));
}
