import { randomUUID } from 'node:crypto';
import { blobKeyOf, type BlobReferences } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { BlobStore } from '../blob-store.ts';
import { CLAIMS_PREFIX, REMOVALS_PREFIX, removalKeyOf, restoreBlob, shaOfKey } from './blobs.ts';

export type BlobCollectorDeps = {
  readonly storage: BlobStore;
  readonly references: BlobReferences;
  /** Per files partition, the offset the next event will get. */
  readonly logEnds: () => Promise<ReadonlyMap<number, number>>;
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
 * Definitions on other workers run beside it, so a removal is made safe by checking after it, not
 * only before (a definition does the converse: claim, then look, ./blobs.ts). A blob no live file
 * references in a read model that covers the files log's end is removed, its bytes kept aside
 * first under a key of this run. Then, with the removal done: the claims on it are read, and the
 * read model is brought to the log's end as it is now and asked again. A definition that looked
 * before the removal had claimed before it, so its claim is seen, or it has been committed and
 * released its claim, so its FileDefined is seen; one that claims after the listing looks after
 * the removal and copies its own staged bytes. When either is seen the kept bytes go back. Only
 * then are they deleted. Bytes kept aside by a run that failed or died (on any worker) are put
 * back by the next collection and their blob decided again, so no crash loses or leaks one. The
 * sweep position moves only after every blob up to it is handled: a crash repeats work, never
 * skips it.
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
    void this.collect().then(
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
    const run = randomUUID();
    // Bytes other runs kept aside (a crash, a failure, or a run still going on another worker): back first, then decided again.
    const leftovers = await storage.list(REMOVALS_PREFIX);
    for (const key of leftovers) await restoreBlob(storage, key, shaOfKey(key, REMOVALS_PREFIX));
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
    const batch = [...new Set([...this.candidates, ...released, ...leftovers.map((key) => shaOfKey(key, REMOVALS_PREFIX))])];
    this.candidates.clear();
    try {
      const referenced = await references.referenced(batch);
      const removed = new Map<string, string>(); // sha256 → where its bytes are kept
      for (const sha of batch) {
        if (referenced.has(sha)) continue;
        const size = await storage.size(blobKeyOf(sha));
        if (size === null) continue; // removed already
        const kept = removalKeyOf(sha, run);
        await storage.copy(blobKeyOf(sha), kept, size);
        removed.set(sha, kept);
        await storage.remove(blobKeyOf(sha));
      }
      const needed = await this.neededAfterRemoval([...removed.keys()]);
      for (const [sha, kept] of removed) {
        if (needed.has(sha)) {
          await restoreBlob(storage, kept, sha);
          logger.info({ sha256: sha }, 'blob kept: a definition claimed it or a file references it after all');
        } else {
          logger.info({ sha256: sha }, 'blob removed: no file references it');
        }
        await storage.remove(kept);
      }
    } catch (error) {
      // Released ones come back from the read model (the sweep position has not moved); removed ones from their kept bytes.
      for (const sha of batch) if (!released.has(sha)) this.candidates.add(sha);
      throw error;
    }
    for (const key of leftovers) await storage.remove(key);
    await references.recordSwept(next);
    return more;
  }

  /**
   * Of blobs just removed, the ones a definition claims or a file references: the claims are
   * listed first, then the read model is brought to the files log's end as it is after that.
   * A claim whose file the read model holds is done (its definition was committed, and its
   * reference is asked for here), so it is deleted rather than left to keep a blob forever.
   */
  private async neededAfterRemoval(removed: readonly string[]): Promise<Set<string>> {
    if (removed.length === 0) return new Set();
    const { references, storage } = this.deps;
    const claims = new Map<string, string>(); // file id → claim key
    const claimed = new Map<string, string>(); // file id → sha256
    for (const sha of removed) {
      for (const key of await storage.list(`${CLAIMS_PREFIX}${sha}/`)) {
        const fileId = key.slice(`${CLAIMS_PREFIX}${sha}/`.length);
        claims.set(fileId, key);
        claimed.set(fileId, sha);
      }
    }
    await this.coveredToEnd();
    const needed = await references.referenced(removed);
    const done = await references.defined([...claims.keys()]);
    for (const [fileId, key] of claims) {
      if (done.has(fileId)) await storage.remove(key);
      else needed.add(claimed.get(fileId)!);
    }
    return needed;
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
