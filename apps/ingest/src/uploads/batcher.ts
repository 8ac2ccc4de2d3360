/**
 * Groups parsed points into per-metric column batches. A metric's batch is handed out when
 * it is full; when too many points wait across metrics, the largest batch goes first, so
 * memory stays bounded whatever the mix of metrics in a file.
 */
export type ColumnBatch = { readonly metric_name: string; readonly timestamps: number[]; readonly values: number[] };

export class PointBatcher {
  private readonly open = new Map<string, ColumnBatch>();
  private buffered = 0;
  private readonly batchPoints: number;
  private readonly maxBuffered: number;

  constructor(batchPoints: number, maxBuffered: number) {
    this.batchPoints = batchPoints;
    this.maxBuffered = maxBuffered;
  }

  /** Adds a point; returns the batches that are ready to be written (often none). */
  add(metricName: string, ts: number, value: number): ColumnBatch[] {
    let batch = this.open.get(metricName);
    if (!batch) {
      batch = { metric_name: metricName, timestamps: [], values: [] };
      this.open.set(metricName, batch);
    }
    batch.timestamps.push(ts);
    batch.values.push(value);
    this.buffered++;
    if (batch.timestamps.length >= this.batchPoints) return [this.take(metricName)];
    if (this.buffered > this.maxBuffered) return [this.take(this.largest())];
    return [];
  }

  /** Everything still buffered, in first-seen metric order. */
  drain(): ColumnBatch[] {
    return [...this.open.keys()].map((name) => this.take(name));
  }

  private take(name: string): ColumnBatch {
    const batch = this.open.get(name)!;
    this.open.delete(name);
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
