import { nameBytes, pointsWithin, type BatchBounds } from './batch-bytes.ts';
import type { PointBatch } from './events.ts';

/**
 * Groups parsed points into column batches, one open batch per group: per points partition when
 * the caller says which partition a name goes to, else per metric. A batch of a partition holds
 * the points of many metrics (their names once, and each point's index among them), so a file
 * written time-major (every metric at one timestamp, then the next), or a push of many metrics,
 * makes as few batches as one written metric by metric. A batch is handed out when it is full
 * (its points, or its bytes: a point that could take it past them starts the next batch); when
 * too many points wait across groups, the largest batch goes first, so memory stays bounded
 * whatever the mix of metrics in a file.
 */
export type ColumnBatch = {
  /** The metrics of the batch's points, each once, in first-seen order. */
  readonly names: string[];
  /** Per point, its metric's index in `names`; empty while the batch holds one metric. */
  readonly nameIndex: number[];
  readonly timestamps: number[];
  readonly values: number[];
};

/** A batch as its PointBatch event carries it: one metric by its name alone, several with each point's index. */
export function pointBatchOf(taskId: string, updatedAt: number, b: ColumnBatch, stage?: string): PointBatch {
  const names = b.names.length === 1 ? { metric_name: b.names[0]! } : { metric_name: '', names: b.names, name_index: b.nameIndex };
  return {
    type: 'PointBatch',
    task_id: taskId,
    ...names,
    updated_at: updatedAt,
    timestamps: b.timestamps,
    values: b.values,
    ...(stage === undefined ? {} : { stage }),
  };
}

/** The record key of a batch: one of its metrics, which all go to the partition the key does. */
export const batchKey = (b: ColumnBatch): string => b.names[0]!;

/** What add() returns for most points: one shared empty list, not a new one per point. */
const NONE: readonly ColumnBatch[] = Object.freeze([]);

/**
 * A batch being filled. `room`: how many more points of the metrics it holds fit its bytes,
 * counted down a point at a time and worked out again only when a metric joins (what
 * pointsWithin answers for it then, at no cost per point).
 */
type OpenBatch = ColumnBatch & { readonly group: number | string; readonly indexOf: Map<string, number>; namesBytes: number; room: number };

export class PointBatcher {
  private readonly open = new Map<number | string, OpenBatch>();
  private readonly groups = new Map<string, number | string>();
  private buffered = 0;
  private last: OpenBatch | null = null;
  private lastName: string | null = null;
  private readonly bounds: BatchBounds;
  private readonly maxBuffered: number;
  private readonly groupOf: ((metricName: string) => number) | undefined;

  /** `groupOf`: the points partition of a metric (batches then hold one partition's metrics); absent, one metric a batch. */
  constructor(bounds: BatchBounds, maxBuffered: number, groupOf?: (metricName: string) => number) {
    this.bounds = bounds;
    this.maxBuffered = maxBuffered;
    this.groupOf = groupOf;
  }

  /** Adds a point; returns the batches that are ready to be written (often none). */
  add(metricName: string, ts: number, value: number): readonly ColumnBatch[] {
    // Rows of one metric usually follow each other: the last batch is found without a lookup.
    let batch = this.lastName === metricName ? this.last : null;
    if (batch === null) {
      const group = this.group(metricName);
      batch = this.open.get(group) ?? this.opened(group, metricName);
      this.last = batch;
      this.lastName = metricName;
    }
    let ready = NONE;
    let index = batch.indexOf.get(metricName);
    if (this.wouldOverflow(batch, index === undefined ? metricName : null)) {
      ready = [this.take(batch.group)];
      batch = this.opened(batch.group, metricName);
      this.last = batch;
      this.lastName = metricName;
      index = 0;
    }
    if (index === undefined) {
      index = batch.names.length;
      batch.names.push(metricName);
      batch.indexOf.set(metricName, index);
      batch.namesBytes += nameBytes(metricName);
      batch.room = pointsWithin(this.bounds.bytes, batch.namesBytes, batch.names.length, batch.timestamps.length);
      // The second metric: the points so far were all the first's.
      if (index === 1) for (let i = 0; i < batch.timestamps.length; i++) batch.nameIndex.push(0);
    }
    if (batch.names.length > 1) batch.nameIndex.push(index);
    batch.timestamps.push(ts);
    batch.values.push(value);
    if (batch.room > 0) batch.room--;
    this.buffered++;
    if (batch.timestamps.length >= this.bounds.points) return [...ready, this.take(batch.group)];
    if (this.buffered > this.maxBuffered) return [...ready, this.take(this.largest())];
    return ready;
  }

  /** Everything still buffered, in first-seen group order. */
  drain(): ColumnBatch[] {
    return [...this.open.keys()].map((group) => this.take(group));
  }

  private opened(group: number | string, metricName: string): OpenBatch {
    const batch: OpenBatch = {
      group,
      names: [metricName],
      nameIndex: [],
      timestamps: [],
      values: [],
      indexOf: new Map([[metricName, 0]]),
      namesBytes: nameBytes(metricName),
      room: pointsWithin(this.bounds.bytes, nameBytes(metricName), 1, 0),
    };
    this.open.set(group, batch);
    return batch;
  }

  /**
   * Whether one more point, of `newName` when that is new to the batch (else of a metric it
   * holds), could take a batch holding points past its bytes. An empty batch takes its point: a
   * point of the longest name fits the smallest budget the settings allow.
   */
  private wouldOverflow(batch: OpenBatch, newName: string | null): boolean {
    if (batch.timestamps.length === 0) return false;
    if (newName === null) return batch.room === 0;
    return pointsWithin(this.bounds.bytes, batch.namesBytes + nameBytes(newName), batch.names.length + 1, batch.timestamps.length) === 0;
  }

  private group(metricName: string): number | string {
    if (this.groupOf === undefined) return metricName;
    let group = this.groups.get(metricName);
    if (group === undefined) {
      group = this.groupOf(metricName);
      this.groups.set(metricName, group);
    }
    return group;
  }

  private take(group: number | string): ColumnBatch {
    const batch = this.open.get(group)!;
    this.open.delete(group);
    if (this.last === batch) {
      this.last = null;
      this.lastName = null;
    }
    this.buffered -= batch.timestamps.length;
    return { names: batch.names, nameIndex: batch.nameIndex, timestamps: batch.timestamps, values: batch.values };
  }

  private largest(): number | string {
    let best: number | string = '';
    let size = -1;
    for (const [group, b] of this.open) if (b.timestamps.length > size) [best, size] = [group, b.timestamps.length];
    return best;
  }
}
