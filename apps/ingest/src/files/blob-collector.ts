import { blobKeyOf, type BlobReferences } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { BlobStore } from '../blob-store.ts';
import type { Mutex } from './blobs.ts';

export type BlobCollectorDeps = {
  readonly storage: BlobStore;
  readonly references: BlobReferences;
  /** Per files partition, the offset the next event will get. */
  readonly logEnds: () => Promise<ReadonlyMap<number, number>>;
  /** The promotion lock: a collection never interleaves with a promotion and its FileDefined. */
  readonly lock: Mutex;
  readonly logger: Logger;
  /** How long a collection waits for the read model to reach the files log's end (MERIDIAN_FILES_READ_MODEL_WAIT_MS). */
  readonly waitMs: number;
  /** How often it looks for deletions the read model shows past the sweep position (MERIDIAN_BLOB_SWEEP_INTERVAL_MS). */
  readonly intervalMs: number;
};

/** Deletions one collection handles at most: bounds its memory and the external table of one query. */
const SWEEP_PAGE = 1000;
const POLL_MS = 50;

/**
 * Removes blobs no live file references, asking the files read model (issue 13): the worker holds
 * no file in memory. Candidates are the blobs deletions released after the sweep position (read
 * from the read model, so a restart or another worker misses none) and the blobs of definitions
 * that failed after promoting (held in memory: one lost at a crash stays, as before).
 *
 * A blob is removed only when no live file references it in a read model that covers the files
 * log as it was when the collection began, inside the promotion lock: every definition this
 * process promoted has its FileDefined in that log, and one not yet promoted copies its bytes
 * again after. Past the wait, the collection is retried later. The sweep position moves only
 * after every blob up to it is handled, so a crash repeats work, never skips it.
 */
export class BlobCollector {
  private readonly candidates = new Set<string>();
  private running = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly deps: BlobCollectorDeps;

  constructor(deps: BlobCollectorDeps) {
    this.deps = deps;
  }

  /** A blob that may have lost its last reference outside the files log (a definition that failed after promoting). */
  enqueue(sha256: string): void {
    this.candidates.add(sha256);
    this.wake(0);
  }

  start(): void {
    this.wake(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private wake(delayMs: number): void {
    if (this.stopped || this.running) return;
    if (this.timer) {
      if (delayMs > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.run();
    }, delayMs);
    this.timer.unref();
  }

  private run(): void {
    this.running = true;
    void this.deps.lock.run(() => this.collect()).then(
      (more) => {
        this.running = false;
        this.wake(more || this.candidates.size > 0 ? 0 : this.deps.intervalMs);
      },
      (err: unknown) => {
        this.running = false;
        this.deps.logger.warn({ err }, 'blob collection failed; retrying');
        this.wake(this.deps.intervalMs);
      },
    );
  }

  /** One collection; true when deletions are left past a full page. */
  private async collect(): Promise<boolean> {
    const { references, storage, logger } = this.deps;
    const covered = await this.coveredToEnd();
    const swept = await references.swept();
    const next = new Map<number, number>();
    const released = new Set<string>();
    let more = false;
    for (const [partition, position] of covered) {
      const from = swept.get(partition) ?? -1;
      if (position <= from) continue;
      const page = await references.released(partition, from, position, SWEEP_PAGE);
      for (const r of page) released.add(r.sha256);
      const full = page.length === SWEEP_PAGE;
      more ||= full;
      next.set(partition, full ? page[page.length - 1]!.offset : position);
    }
    const batch = [...new Set([...this.candidates, ...released])];
    this.candidates.clear();
    const referenced = await references.referenced(batch).catch((error: unknown) => {
      for (const sha of batch) if (!released.has(sha)) this.candidates.add(sha);
      throw error;
    });
    for (const [i, sha] of batch.entries()) {
      if (referenced.has(sha)) continue;
      try {
        await storage.remove(blobKeyOf(sha));
        logger.info({ sha256: sha }, 'blob removed: no file references it');
      } catch (error) {
        // Released ones come back from the read model: the sweep position has not moved.
        for (const rest of batch.slice(i)) if (!released.has(rest)) this.candidates.add(rest);
        throw error;
      }
    }
    await references.recordSwept(next);
    return more;
  }

  /** The read model's positions once they reach the files log's end as it is now; throws past the wait. */
  private async coveredToEnd(): Promise<Map<number, number>> {
    const ends = await this.deps.logEnds();
    const deadline = Date.now() + this.deps.waitMs;
    for (;;) {
      const positions = await this.deps.references.positions();
      if ([...ends].every(([p, end]) => end === 0 || (positions.get(p) ?? -1) >= end - 1)) return positions;
      if (Date.now() >= deadline || this.stopped) throw new Error(`the files read model did not reach the files log's end within ${this.deps.waitMs} ms`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
}
