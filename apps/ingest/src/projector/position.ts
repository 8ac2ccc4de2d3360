import type { BatchPosition } from '@meridian/clickhouse';
import { persist, type BatchContext, type ProjectorWork } from './batch-context.ts';

/**
 * Reads where the sink is. The last insert of a previous owner may have stored its points
 * without the catalog's share and that owner died before repairing it (flush): the batch at
 * each partition's position is checked, as after an unknown outcome here (0 points almost always).
 */
export async function loadSinkPositions(work: ProjectorWork, partitions: readonly number[], ctx: BatchContext): Promise<void> {
  const { logger, sink, projection } = work;
  let max = new Map<number, number>();
  await persist(logger, 'reading the sink positions', ctx, async () => {
    await sink.settle();
    max = await sink.maxOffsets(partitions);
    for (const [p, o] of max) projection.setSinkMax(p, o);
    logger.info({ sink_max_offsets: Object.fromEntries(max) }, 'projector resumes after the sink positions');
  });
  await repairCatalog(
    work,
    [...max].filter(([, o]) => o >= 0).map(([partition, offset]) => ({ partition, offset })),
    ctx,
  );
}

/** Adds to the metric catalog what it lacks of the metrics of these stored batches. */
export async function repairCatalog(work: ProjectorWork, batches: readonly BatchPosition[], ctx: BatchContext): Promise<void> {
  const { logger, sink } = work;
  if (batches.length === 0) return;
  await persist(logger, 'repairing the metric catalog', ctx, async () => {
    const added = await sink.repairCatalog(batches);
    if (added > 0) logger.warn({ points: added }, 'metric catalog was short of an insert whose server or writer died; added');
  });
}
