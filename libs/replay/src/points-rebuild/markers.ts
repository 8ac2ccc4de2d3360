import { randomBytes } from 'node:crypto';
import { applyDeletion, createPointsStages, type PointsStages } from '@meridian/clickhouse';
import type { PointsFact } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { refillStage, sealedShare, type Deletion, type Projection, type StagedSeal } from '@meridian/projection';
import { retry, RETRY_POLICIES } from '@meridian/retry';
import type { RebuildInput } from '../rebuild.ts';
import type { RebuildCounts, RebuildWriter } from './writer.ts';

export type RebuildMarkers = {
  /** Moves a staged share into the table, as the live projector does into `points` (every row before it is stored first). */
  sealStaged(seal: StagedSeal): Promise<void>;
  /** Applies a deletion's marker to the table, as the live projector does to `points` (every row before it is stored first). */
  applyMarker(deletion: Deletion): Promise<void>;
};

/** A rebuild's markers that change the table beyond its inserts: staged seals and deletions. */
export function rebuildMarkers(
  input: RebuildInput,
  codec: EventCodec<PointsFact>,
  writer: RebuildWriter,
  projection: Projection,
  counts: RebuildCounts,
): RebuildMarkers {
  let stages: PointsStages | null = null;

  async function sealStaged(seal: StagedSeal): Promise<void> {
    if (input.seals === undefined || input.catalog === undefined) {
      throw new Error(
        `points partition ${seal.partition} offset ${seal.offset} seals a staged upload: a rebuild into ${input.table} needs its seals and catalog tables`,
      );
    }
    await writer.flush();
    await writer.inflight();
    stages ??= createPointsStages(input.clickhouse, {
      points: input.table,
      catalog: input.catalog,
      seals: input.seals,
      ...(input.rollups ? { rollups: input.rollups } : {}),
    });
    const into = stages;
    const share = sealedShare(seal);
    const refill = {
      log: input.log,
      codec,
      topic: input.topic,
      batchRows: input.batchRows,
      groupId: `${input.groupPrefix}replay-${input.table}-refill-${randomBytes(4).toString('hex')}`,
      // The live projector dead-letters such a batch and fails its task; either way no table holds it.
      bad: async () => {
        bad++;
      },
    };
    let bad = 0;
    // The rows the seal moved in: not the share's rows a --from copied from live already.
    let moved = 0;
    await retry(
      async () => {
        bad = 0;
        ({ points: moved } = await into.seal(share, (stage) => refillStage(refill, seal, stage)));
      },
      {
        ...RETRY_POLICIES.rebuildInsert,
        retriable: () => true,
        ...(input.signal ? { signal: input.signal } : {}),
        onRetry: (error, attempt) => input.logger?.warn({ err: error, attempt }, `sealing a staged upload into ${input.table} failed; retrying`),
      },
    );
    counts.rejected += bad;
    projection.sealed(seal);
    counts.stagedSeals++;
    counts.points += moved;
  }

  async function applyMarker(deletion: Deletion): Promise<void> {
    if (input.seals === undefined || input.catalog === undefined) {
      throw new Error(
        `points partition ${deletion.partition} offset ${deletion.offset} deletes points: a rebuild into ${input.table} needs its seals and catalog tables`,
      );
    }
    await writer.flush();
    await writer.inflight();
    const targets = { points: input.table, catalog: input.catalog, seals: input.seals, ...(input.rollups ? { rollups: input.rollups } : {}) };
    const { task_id: taskId, partition, offset, metrics, fromMs, toMs, rollups } = deletion;
    await retry(() => applyDeletion(input.clickhouse, targets, { taskId, partition, offset, metrics, fromMs, toMs, rollups }), {
      ...RETRY_POLICIES.rebuildInsert,
      retriable: () => true,
      ...(input.signal ? { signal: input.signal } : {}),
      onRetry: (error, attempt) => input.logger?.warn({ err: error, attempt }, `deleting points from ${input.table} failed; retrying`),
    });
    projection.deleted(deletion);
    counts.deletions++;
  }

  return { sealStaged, applyMarker };
}
