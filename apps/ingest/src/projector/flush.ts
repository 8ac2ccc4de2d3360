import { refusedBeforeWriting } from '@meridian/clickhouse';
import { announceProjected } from './announce.ts';
import { persist, type BatchContext, type ProjectorWork } from './batch-context.ts';
import { repairCatalog } from './position.ts';

/** Writes the buffered rows (one insert), announces the pending seals, commits what is done. */
export async function flush(work: ProjectorWork, ctx: BatchContext): Promise<void> {
  const { logger, sink, projection, inserts, producer, taskCodec } = work;
  const { topics } = work.ingest;
  const { rows } = projection.pending();
  if (rows > 0) {
    const started = performance.now();
    let unknownOutcome = false;
    const inThisInsert = projection.pending().segments; // before a retry drops the ones found stored
    await persist(logger, 'insert into points', ctx, async (retry) => {
      if (retry) {
        // The failed insert may have landed (all of it) or not (none of it): ask the sink.
        await sink.settle();
        const partitions = [...new Set(projection.pending().segments.map((s) => s.partition))];
        for (const [p, o] of await sink.maxOffsets(partitions)) projection.setSinkMax(p, o);
        projection.dropStored();
      }
      const todo = projection.pending().segments;
      if (todo.length === 0) return;
      try {
        await sink.insert(todo);
      } catch (error) {
        if (!refusedBeforeWriting(error)) unknownOutcome = true;
        throw error;
      }
      projection.stored(todo);
    });
    // The failed attempt may have stored the points and not the catalog's share (sink.ts).
    if (unknownOutcome) await repairCatalog(work, inThisInsert, ctx);
    inserts.record(rows, performance.now() - started);
  }
  const { seals } = projection.pending();
  if (seals.length > 0) {
    await persist(logger, 'announcing projected segments', ctx, () => announceProjected(producer, taskCodec, topics.tasks, seals));
  }
  projection.clearBuffer();
  ctx.heart.check();
  await commitDone(work, ctx);
}

/** Commits the consumed positions; only called when nothing taken is still pending. */
export async function commitDone(
  work: Pick<ProjectorWork, 'projection'>,
  ctx: Pick<BatchContext, 'uncommittedOffsets' | 'commitOffsetsIfNecessary'>,
): Promise<void> {
  if (!work.projection.isEmpty) return;
  const offsets = ctx.uncommittedOffsets();
  if (offsets.topics.length === 0) return;
  await ctx.commitOffsetsIfNecessary(offsets);
}
