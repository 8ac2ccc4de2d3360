import type { LogWriter } from '@meridian/domain';

/**
 * Sends an upload's point batches in its transaction with one request in flight, so parsing
 * the next batch overlaps the broker's acknowledgement of the last one; one at a time keeps
 * the order of the idempotent producer's sends. Counts the points each partition received,
 * for the upload's seals.
 */
export class PointBatchSender {
  readonly pointsPerPartition = new Map<number, number>();
  private readonly tx: LogWriter;
  private readonly topic: string;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(tx: LogWriter, topic: string) {
    this.tx = tx;
    this.topic = topic;
  }

  /** Starts sending one batch once the previous send is acknowledged; throws that send's error. */
  async send(key: string, value: Buffer, points: number): Promise<void> {
    await this.inFlight;
    this.inFlight = this.tx.send({ topic: this.topic, acks: -1, messages: [{ key, value }] }).then(([meta]) => {
      if (meta) this.pointsPerPartition.set(meta.partition, (this.pointsPerPartition.get(meta.partition) ?? 0) + points);
    });
    // Marked as observed: an upload abandoned mid-send must not crash the process with an
    // unhandled rejection. The error itself reaches the next send() or flush().
    this.inFlight.catch(() => undefined);
  }

  /** Waits for the last send; throws its error. */
  async flush(): Promise<void> {
    await this.inFlight;
  }
}
