import {
  batchKey,
  canWrite,
  MAX_REPORTED_ERRORS,
  nameBytes,
  pointBatchOf,
  pointsWithin,
  type BatchBounds,
  type ColumnBatch,
  type PointsFact,
  type UserRecord,
} from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import type { DecodedPush, Rejected } from '@meridian/protocols';
import type { PushDecision } from '../uploads/push-decision.ts';

/**
 * The series a protocol push's task names: the first, sorted. An agent's push names hundreds of
 * series, again every scrape; listing them all (up to MAX_LISTED_METRICS, as an upload's task
 * does) made each task event larger than the push's points, paid by the log, both folds and the
 * tasks read model, for a task no agent reads (its answer carries no task id).
 */
export const MAX_LISTED_SERIES = 16;

export type SeriesPushOptions = {
  readonly taskId: string;
  /** Accepted at: every point's updated_at. */
  readonly at: number;
  readonly batch: BatchBounds;
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
  const batches = new SeriesBatches(o.batch);
  const written: string[] = [];
  let points = 0;
  for (const series of push.series) {
    if (!canWrite(user, series.name)) {
      refusedPoints += series.values.length;
      refused.push({ where: series.name, reason: 'no write access to this metric', points: series.values.length });
      continue;
    }
    written.push(series.name);
    batches.add(o.partitionOf(series.name, o.pointsPartitions), series);
    points += series.values.length;
  }
  return {
    decision: {
      kind: 'stored',
      batches: batches.drain().map((b) => ({ key: batchKey(b), points: b.timestamps.length, value: o.codec.encode(pointBatchOf(o.taskId, o.at, b)) })),
      rows_total: points + refusedPoints,
      points_accepted: points,
      rows_rejected: refusedPoints,
      errors: refused.slice(0, MAX_REPORTED_ERRORS).map((r) => ({ row: 0, column: r.where, reason: `${r.reason} (${r.points} points)` })),
      metrics: written.sort().slice(0, MAX_LISTED_SERIES),
    },
    refused,
    refusedPoints,
  };
}

/**
 * A push's series in column batches, one open batch per points partition, as PointBatcher
 * makes them from single points, but a series at a time: a decoded series' points are already
 * columns, and each series of a push is distinct (the decoder merged repeats), so its name is
 * new to its batch. A batch is handed out once it holds `bounds.points` points, or before a
 * point that could take it past `bounds.bytes`; a series that fills one goes on in the next.
 */
class SeriesBatches {
  private readonly open = new Map<number, ColumnBatch & { namesBytes: number }>();
  private readonly full: ColumnBatch[] = [];
  private readonly bounds: BatchBounds;

  constructor(bounds: BatchBounds) {
    this.bounds = bounds;
  }

  add(partition: number, series: { readonly name: string; readonly timestamps: readonly number[]; readonly values: readonly number[] }): void {
    const n = series.timestamps.length;
    const seriesBytes = nameBytes(series.name);
    for (let from = 0; from < n;) {
      let batch = this.open.get(partition);
      let room = batch === undefined ? 0 : this.room(batch, seriesBytes);
      if (batch !== undefined && room === 0) this.close(partition, batch);
      if (batch === undefined || room === 0) {
        this.open.set(partition, (batch = { names: [], nameIndex: [], timestamps: [], values: [], namesBytes: 0 }));
        room = this.room(batch, seriesBytes);
      }
      const to = Math.min(n, from + room);
      const index = batch.names.length;
      batch.names.push(series.name);
      batch.namesBytes += seriesBytes;
      // The second metric: the points so far were all the first's.
      if (index === 1) for (let i = 0; i < batch.timestamps.length; i++) batch.nameIndex.push(0);
      for (let i = from; i < to; i++) {
        batch.timestamps.push(series.timestamps[i]!);
        batch.values.push(series.values[i]!);
        if (index > 0) batch.nameIndex.push(index);
      }
      from = to;
      if (to < n || batch.timestamps.length >= this.bounds.points) this.close(partition, batch);
    }
  }

  /** The full batches in the order they filled, then the open ones in the order they opened. */
  drain(): ColumnBatch[] {
    const all = [...this.full, ...this.open.values()].map(({ names, nameIndex, timestamps, values }) => ({ names, nameIndex, timestamps, values }));
    this.full.length = 0;
    this.open.clear();
    return all;
  }

  /**
   * How many points of a series new to `batch` it takes within both bounds (at least one when
   * empty: a point of the longest name fits the smallest byte budget the settings allow).
   */
  private room(batch: ColumnBatch & { readonly namesBytes: number }, seriesBytes: number): number {
    const held = batch.timestamps.length;
    const room = Math.min(this.bounds.points - held, pointsWithin(this.bounds.bytes, batch.namesBytes + seriesBytes, batch.names.length + 1, held));
    return held === 0 ? Math.max(1, room) : room;
  }

  private close(partition: number, batch: ColumnBatch & { namesBytes: number }): void {
    this.full.push(batch);
    this.open.delete(partition);
  }
}
