import { type ConsumedMessage, type TaskEvent } from '@meridian/domain';
import { appendEvents } from '@meridian/kafka';
import { sendToDeadLetter } from '../dead-letter.ts';
import { persist, type BatchContext, type ProjectorWork } from './batch-context.ts';

/** Sends a points message that cannot be projected to the dead-letter topic. */
export async function reject(work: ProjectorWork, ctx: BatchContext, partition: number, message: ConsumedMessage, reason: string): Promise<void> {
  const { logger, producer } = work;
  const { topics } = work.ingest;
  logger.warn({ partition, offset: message.offset, reason }, 'points message sent to the dead-letter topic');
  await persist(logger, 'dead-lettering a points message', ctx, () =>
    sendToDeadLetter(producer, topics.deadLetter, {
      topic: topics.points,
      partition,
      offset: Number(message.offset),
      key: message.key,
      value: message.value,
      reason,
    }),
  );
}

/**
 * A point batch that cannot be projected fails its upload's task, so the task never reports
 * success with points missing. Its other batches may be stored already: the reason says so.
 */
export async function failUpload(work: ProjectorWork, ctx: BatchContext, partition: number, offset: number, taskId: string, reason: string): Promise<void> {
  const { logger, producer, taskCodec } = work;
  const { topics } = work.ingest;
  const failed: TaskEvent = {
    type: 'TaskFailed',
    task_id: taskId,
    reason: `a point batch of this upload (points partition ${partition}, offset ${offset}) could not be stored: ${reason}; it is in the dead-letter topic, and the upload's other batches may be stored`,
    rows_total: 0,
    rows_rejected: 0,
    errors: [],
    at: Date.now(),
  };
  await persist(logger, 'failing the task of a rejected point batch', ctx, async () => {
    await appendEvents(producer, taskCodec, topics.tasks, taskId, [failed]);
  });
}
