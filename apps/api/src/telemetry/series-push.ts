import { batchKey, canWrite, MAX_LISTED_METRICS, MAX_REPORTED_ERRORS, PointBatcher, pointBatchOf, type PointsFact, type UserRecord } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import type { DecodedPush, Rejected } from '@meridian/protocols';
import type { PushDecision } from '../uploads/push-decision.ts';

export type SeriesPushOptions = {
  readonly taskId: string;
  /** Accepted at: every point's updated_at. */
  readonly at: number;
  readonly batchPoints: number;
  readonly pointsPartitions: number;
  readonly partitionOf: (name: string, partitions: number) => number;
  readonly codec: EventCodec<PointsFact>;
};

/** A decoded push decided for the caller: what is stored, and every refusal (the decoder's and the caller's access). */
export type SeriesPush = {
  readonly decision: Extract<PushDecision, { kind: 'stored' }>;
  readonly refused: readonly Rejected[];
  readonly refusedPoints: number;
};

/**
 * Decides a push of decoded series on the push path: a series the caller may not write is
 * refused with its points (the request names it, so saying so tells nothing new), the others
 * are batched per points partition and encoded, and the refusals become the task's errors.
 * Each series is written whole or refused whole; a protocol's answer reports the refusals.
 */
export function decideSeriesPush(push: DecodedPush, user: UserRecord, o: SeriesPushOptions): SeriesPush {
  const refused: Rejected[] = [...push.rejected];
  let refusedPoints = push.rejectedPoints;
  const batcher = new PointBatcher(o.batchPoints, Number.MAX_SAFE_INTEGER, (name) => o.partitionOf(name, o.pointsPartitions));
  const batches = [];
  const written: string[] = [];
  let points = 0;
  for (const series of push.series) {
    if (!canWrite(user, series.name)) {
      refusedPoints += series.values.length;
      refused.push({ where: series.name, reason: 'no write access to this metric', points: series.values.length });
      continue;
    }
    written.push(series.name);
    for (let i = 0; i < series.values.length; i++) batches.push(...batcher.add(series.name, series.timestamps[i]!, series.values[i]!));
    points += series.values.length;
  }
  batches.push(...batcher.drain());
  return {
    decision: {
      kind: 'stored',
      batches: batches.map((b) => ({ key: batchKey(b), points: b.timestamps.length, value: o.codec.encode(pointBatchOf(o.taskId, o.at, b)) })),
      rows_total: points + refusedPoints,
      points_accepted: points,
      rows_rejected: refusedPoints,
      errors: refused.slice(0, MAX_REPORTED_ERRORS).map((r) => ({ row: 0, column: r.where, reason: `${r.reason} (${r.points} points)` })),
      metrics: written.sort().slice(0, MAX_LISTED_METRICS),
    },
    refused,
    refusedPoints,
  };
}
