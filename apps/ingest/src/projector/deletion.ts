import type { Deletion } from '@meridian/projection';
import { persist, type BatchContext, type ProjectorWork } from './batch-context.ts';

/** Applies a deletion's marker (the buffered rows before it are flushed), then it counts in the position. */
export async function applyDeletion(work: ProjectorWork, ctx: BatchContext, deletion: Deletion): Promise<void> {
  const { logger, projection, ingest } = work;
  const started = performance.now();
  const { task_id: taskId, partition, offset, metrics, fromMs, toMs, rollups } = deletion;
  await persist(logger, 'deleting points', ctx, () => ingest.deletePoints({ taskId, partition, offset, metrics, fromMs, toMs, rollups }));
  projection.deleted(deletion);
  logger.info(
    { task_id: taskId, partition, offset, metrics: metrics.length, from_ms: fromMs, to_ms: toMs, rollups, ms: Math.round(performance.now() - started) },
    'points deleted',
  );
}
