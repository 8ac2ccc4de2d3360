/**
 * Groups parsed points into per-metric column batches. A metric's batch is handed out when
 * it is full; when too many points wait across metrics, the largest batch goes first, so
 * memory stays bounded whatever the mix of metrics in a file.
 */
export type ColumnBatch = { readonly metric_name: string; readonly timestamps: number[]; readonly values: number[] };

/** What add() returns for most points: one shared empty list, not a new one per point. */
const NONE: readonly ColumnBatch[] = Object.freeze([]);

export class PointBatcher {
  private readonly open = new Map<string, ColumnBatch>();
  private buffered = 0;
  private last: ColumnBatch | null = null;
  private readonly batchPoints: number;
  private readonly maxBuffered: number;

  constructor(batchPoints: number, maxBuffered: number) {
    this.batchPoints = batchPoints;
    this.maxBuffered = maxBuffered;
  }

  /** Adds a point; returns the batches that are ready to be written (often none). */
  add(metricName: string, ts: number, value: number): readonly ColumnBatch[] {
    // Rows of one metric usually follow each other: the last batch is found without a lookup.
    let batch = this.last !== null && this.last.metric_name === metricName ? this.last : this.open.get(metricName);
    if (!batch) {
      batch = { metric_name: metricName, timestamps: [], values: [] };
      this.open.set(metricName, batch);
    }
    this.last = batch;
    batch.timestamps.push(ts);
    batch.values.push(value);
    this.buffered++;
    if (batch.timestamps.length >= this.batchPoints) return [this.take(metricName)];
    if (this.buffered > this.maxBuffered) return [this.take(this.largest())];
    return NONE;
  }

  /** Everything still buffered, in first-seen metric order. */
  drain(): ColumnBatch[] {
    return [...this.open.keys()].map((name) => this.take(name));
  }

  private take(name: string): ColumnBatch {
    const batch = this.open.get(name)!;
    this.open.delete(name);
    if (this.last === batch) this.last = null;
    this.buffered -= batch.timestamps.length;
    return batch;
  }

  private largest(): string {
    let best = '';
    let size = -1;
    for (const [name, b] of this.open) if (b.timestamps.length > size) [best, size] = [name, b.timestamps.length];
    return best;
  }
}
