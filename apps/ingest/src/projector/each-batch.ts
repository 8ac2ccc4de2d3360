import type { BatchPayload, PointsFact } from '@meridian/domain';
import { UndecodableEventError } from '@meridian/events';
import { stageHeader, type Projection } from '@meridian/projection';
import { Stopping } from '../persist.ts';
import type { BatchContext, ProjectorWork } from './batch-context.ts';
import { applyDeletion } from './deletion.ts';
import { commitDone, flush } from './flush.ts';
import { Heart } from './heart.ts';
import { loadSinkPositions } from './position.ts';
import { failUpload, reject } from './reject.ts';
import { dropSealedStage, sealStaged } from './staged-seal.ts';

/** Rows waiting longer than this are written at the end of the batch even without a seal. */
const LINGER_MS = 1000;

/**
 * Whether the buffer is written when a batch ends. A fetch hands over one batch per partition,
 * and a push seals its share in each partition it wrote to: flushing at every seal made one
 * insert (one part, merges after) per partition of every fetch. Seals wait for the fetch's last
 * batch instead, so its partitions' rows go in one insert; a full buffer or one lingering too
 * long is written at once.
 */
export function flushesAtBatchEnd(projection: Pick<Projection, 'hasSeals' | 'isFull' | 'age'>, lastOfFetch: boolean, now: number): boolean {
  return (projection.hasSeals && lastOfFetch) || projection.isFull || projection.age(now) >= LINGER_MS;
}

/** The projector's eachBatch: each message decided (state.ts) and acted on, in offset order. `assigned`: the partitions of the last join. */
export function projectBatches(work: ProjectorWork, assigned: () => readonly number[]): (payload: BatchPayload) => Promise<void> {
  const { projection, pointsCodec } = work;
  return async function eachBatch(payload: BatchPayload): Promise<void> {
    const { batch, resolveOffset, isRunning } = payload;
    const partition = batch.partition;
    const ctx: BatchContext = { ...payload, heart: new Heart(payload.heartbeat) };
    try {
      if (!projection.knows(partition)) {
        await loadSinkPositions(
          work,
          [...new Set([...assigned(), partition])].filter((p) => !projection.knows(p)),
          ctx,
        );
      }
      for (const message of batch.messages) {
        if (!isRunning()) return;
        const offset = Number(message.offset);
        // A staged batch is known by its header, without decoding it: its seal brings its rows in.
        const staged = stageHeader(message);
        let fact: PointsFact | null = null;
        if (staged === undefined) {
          try {
            fact = pointsCodec.decode(message.value ?? Buffer.alloc(0));
          } catch (error) {
            if (!(error instanceof UndecodableEventError)) throw error;
            // At or below the sink position it was dead-lettered before later rows were written.
            if (!projection.inSink(partition, offset)) await reject(work, ctx, partition, message, error.message);
            resolveOffset(message.offset);
            continue;
          }
        }
        const decision = fact === null ? projection.decideStaged(partition, offset, staged!) : projection.decide(partition, offset, fact);
        switch (decision.kind) {
          case 'buffer':
            if (projection.wouldOverflow(decision.rows)) await flush(work, ctx);
            projection.add(decision.segment, Date.now());
            break;
          case 'seal':
            projection.addSeal(decision.seal, Date.now());
            if (decision.leftStage !== undefined) await dropSealedStage(work, decision.seal, decision.leftStage);
            break;
          case 'reject':
            await reject(work, ctx, partition, message, decision.reason);
            if (fact?.type === 'PointBatch') await failUpload(work, ctx, partition, offset, fact.task_id, decision.reason);
            break;
          case 'skip':
          case 'staged':
            break;
          case 'stagedSeal':
            await flush(work, ctx);
            await sealStaged(work, ctx, decision.seal);
            projection.addSeal({ task_id: decision.seal.task_id, partition, offset }, Date.now());
            break;
          case 'delete':
            await flush(work, ctx);
            await applyDeletion(work, ctx, decision.deletion);
            projection.addSeal({ task_id: decision.deletion.task_id, partition, offset }, Date.now());
            break;
        }
        resolveOffset(message.offset);
        await ctx.heart.beat();
      }
      if (flushesAtBatchEnd(projection, batch.lastOfFetch ?? true, Date.now())) await flush(work, ctx);
      else await commitDone(work, ctx);
    } catch (error) {
      if (error instanceof Stopping) return;
      throw error;
    }
  };
}
