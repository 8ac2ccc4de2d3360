import type { ConsumedMessage } from '@meridian/domain';
import { refillStage, sealedShare, type Seal, type StagedSeal } from '@meridian/projection';
import { randomBytes } from 'node:crypto';
import { persist, stillOwned, type BatchContext, type ProjectorWork } from './batch-context.ts';
import { failUpload, reject } from './reject.ts';

/** Moves a staged share into points (the buffered rows before it are flushed), then it counts in the position. */
export async function sealStaged(work: ProjectorWork, ctx: BatchContext, seal: StagedSeal): Promise<void> {
  const { logger, stages, projection, pointsCodec, groupId } = work;
  const { topics } = work.ingest;
  const started = performance.now();
  const share = sealedShare(seal);
  const refill = {
    // A share's batches may be older than the brokers' window: read as archive plus brokers.
    log: work.ingest.archive.history,
    codec: pointsCodec,
    topic: topics.points,
    groupId: `${groupId}-refill-${randomBytes(4).toString('hex')}`,
    batchRows: work.options.batchRows,
    bad: async (message: ConsumedMessage, taskId: string, reason: string) => {
      await reject(work, ctx, seal.partition, message, reason);
      await failUpload(work, ctx, seal.partition, Number(message.offset), taskId, reason);
    },
  };
  await persist(logger, 'sealing a staged upload', ctx, async () => {
    // A seal is several queries, some long (a refill, waits for inserts): each write of it is
    // fenced, so one that outlasted this member's ownership cannot attach the share a second time.
    const outcome = await stages.seal(
      share,
      (stage) => refillStage(refill, seal, stage),
      () => stillOwned(ctx, 'sealing a staged upload'),
    );
    logger.info(
      {
        task_id: seal.task_id,
        partition: seal.partition,
        offset: seal.offset,
        points: seal.points,
        how: outcome.how,
        refilled: outcome.refilled,
        moved: outcome.points,
        ms: Math.round(performance.now() - started),
      },
      'staged upload sealed into points',
    );
  });
  projection.sealed(seal);
}

/** Best effort: a stage left by a crash after its seal was recorded (the sweeper drops it otherwise). */
export async function dropSealedStage(work: ProjectorWork, seal: Seal, attempt: string): Promise<void> {
  const { logger, stages } = work;
  await stages
    .dropSealed(seal.task_id, attempt, seal.partition)
    .catch((error: unknown) =>
      logger.warn({ err: error, task_id: seal.task_id, partition: seal.partition }, 'dropping the stage of a recorded seal failed; the sweeper will'),
    );
}
