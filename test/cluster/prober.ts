/**
 * A client that keeps asking for the same thing (a download, a file) while a case runs, and
 * remembers when each answer came and whether it was right. The figures are measurements,
 * not timed assertions: the test asserts only that right answers kept coming during the outage.
 */
export class Prober {
  private readonly outcomes: Array<{ at: number; ok: boolean; why?: string }> = [];
  private running = true;
  private readonly loop: Promise<void>;
  private readonly startedAt = Date.now();

  constructor(check: (signal: AbortSignal) => Promise<void>, intervalMs = 250, timeoutMs = 30_000) {
    this.loop = (async () => {
      while (this.running) {
        try {
          await check(AbortSignal.timeout(timeoutMs));
          this.outcomes.push({ at: Date.now(), ok: true });
        } catch (error) {
          this.outcomes.push({ at: Date.now(), ok: false, why: (error as Error).message });
        }
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  get failures(): number {
    return this.outcomes.filter((o) => !o.ok).length;
  }

  get successes(): number {
    return this.outcomes.filter((o) => o.ok).length;
  }

  /** The first few distinct reasons of failure, for the report. */
  get reasons(): string[] {
    return [...new Set(this.outcomes.filter((o) => !o.ok).map((o) => o.why ?? ''))].slice(0, 3);
  }

  /** Whether a right answer came between two instants. */
  answeredBetween(from: number, to: number): boolean {
    return this.outcomes.some((o) => o.ok && o.at >= from && o.at <= to);
  }

  /**
   * The longest time, in seconds, between two right answers that had a failure between them
   * (0 when nothing failed): how long a client retrying at once would have gone without service.
   */
  secondsWithoutService(): number {
    let longest = 0;
    let lastOk = this.startedAt;
    let failedSince = false;
    for (const o of this.outcomes) {
      if (!o.ok) failedSince = true;
      else {
        if (failedSince) longest = Math.max(longest, o.at - lastOk);
        lastOk = o.at;
        failedSince = false;
      }
    }
    if (failedSince) longest = Math.max(longest, Date.now() - lastOk);
    return longest / 1000;
  }
}
