/**
 * Keeps a consumer's group membership alive through long work inside one eachBatch call.
 * kafkajs only heartbeats when asked; a heartbeat is how it learns of a rebalance (it throws).
 * Work is never abandoned midway because of that error (an insert in flight must land or fail
 * before the partitions move): the error is kept and thrown by `check()` once the work is done.
 */
export class Heart {
  private readonly heartbeat: () => Promise<void>;
  private readonly everyMs: number;
  private lastBeat = 0;
  private failure: { error: unknown } | null = null;

  constructor(heartbeat: () => Promise<void>, everyMs = 1000) {
    this.heartbeat = heartbeat;
    this.everyMs = everyMs;
  }

  /** Heartbeats if the last one is older than everyMs; throws what the heartbeat throws. */
  async beat(): Promise<void> {
    this.check();
    if (Date.now() - this.lastBeat < this.everyMs) return;
    this.lastBeat = Date.now();
    await this.heartbeat();
  }

  /** Awaits `work`, heartbeating meanwhile; a heartbeat failure is kept for `check()`. */
  async during<T>(work: Promise<T>): Promise<T> {
    const timer = setInterval(() => {
      this.lastBeat = Date.now();
      this.heartbeat().catch((error: unknown) => {
        this.failure ??= { error };
      });
    }, this.everyMs);
    try {
      return await work;
    } finally {
      clearInterval(timer);
    }
  }

  /** Throws the first heartbeat failure seen during work (a rebalance, an expired session). */
  check(): void {
    if (this.failure) throw this.failure.error;
  }
}
