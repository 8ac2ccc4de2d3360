import { randomUUID } from 'node:crypto';
import { blobKeyOf, type BlobReferences, type TaskReadModel } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { BlobStore } from '../blob-store.ts';
import { CLAIMS_PREFIX, partsOfKey, REMOVALS_PREFIX, removalKeyOf, restoreBlob } from './blobs.ts';

export type BlobCollectorDeps = {
  readonly storage: BlobStore;
  readonly references: BlobReferences;
  /** Which definitions' tasks have finished: their claims are done (the tasks read model). */
  readonly tasks: Pick<TaskReadModel, 'finishedAmong'>;
  /** Per files partition, the offset the next event will get. */
  readonly logEnds: () => Promise<ReadonlyMap<number, number>>;
  readonly logger: Logger;
  /** How long a collection waits for the read model to reach the files log's end (MERIDIAN_FILES_READ_MODEL_WAIT_MS). */
  readonly waitMs: number;
  /** How often it looks for deletions the read model shows past the sweep position (MERIDIAN_BLOB_SWEEP_INTERVAL_MS). */
  readonly intervalMs: number;
  /** Age past which another run's kept bytes are taken over; a run uses its own within half of it, dated from the copy's return (MERIDIAN_BLOB_REMOVAL_LEASE_MS). */
  readonly removalLeaseMs: number;
  /** Age past which a claim counts as a dead definition's (MERIDIAN_BLOB_CLAIM_TTL_MS). */
  readonly claimTtlMs: number;
  /** The clock that ages kept bytes and claims against the bucket's times (tests move it). */
  readonly now?: () => number;
};

/** Deletions one collection handles at most: bounds its memory and the external table of one query. */
const SWEEP_PAGE = 1000;
const POLL_MS = 50;

/**
 * Removes blobs no live file references, asking the files read model: the worker holds
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
 * then are they deleted; a failure before that puts every removed blob back.
 *
 * Collections on several workers run at once, so each touches only its own kept bytes while they
 * are young. Each kept copy's clock starts when its copy returns (a large copy may take long; the
 * bound is on the time after it): a run starts no removal once its first copy is a quarter of the
 * removal lease old, removes no blob whose copy the bucket dates past a quarter of the lease, and
 * uses each copy within half of it (past that the copy goes back). Bytes older than the whole
 * lease belong to a run that died or failed to put them back, and the next collection takes them
 * over (puts them back, decides their blob again, deletes them), so no crash loses or leaks one.
 * What the lease cannot protect against: a run stalled (paused, swapped out) for about a quarter
 * of the lease between a check of its clock and the request after it (a copy the bucket dates a
 * quarter old is then used up to half the lease later by this run's clock: another run takes it
 * over at the whole lease by the bucket's), or worker and bucket clocks that disagree by about
 * that much; another run may then take over copies this one still uses. The lease is minutes for
 * that reason. A copy the bucket dates past a quarter of the lease already (a long copy dated at
 * its start, a worker clock ahead of the bucket's) is deleted, its blob left and decided again
 * later, with an error logged: the others go on, so one such blob does not hold the sweep.
 *
 * A blob a live definition claims (younger than the TTL, its task not finished) is not removed at
 * all: removing it would leave it absent, each collection, for up to the read model's wait, and a
 * definition committing then has a file whose download fails until the put-back. The claims are
 * listed again after each removal, since one may come after the first look. The sweep position
 * moves only after every blob up to it is handled (removed, kept, or left to be decided again): a
 * crash repeats work, never skips it. A blob left for later (claimed, or its copy dated too old)
 * is decided again at the next collection, from memory (the claim's task may have failed in a
 * read model that was behind): one lost at a crash stays, as a failed definition's does.
 */
export class BlobCollector {
  private readonly candidates = new Set<string>();
  /** Blobs left for later (a live claim, a copy dated too old): decided again at the next collection, which they do not hasten. */
  private readonly deferred = new Set<string>();
  /** The collection under way, which stop() waits for. */
  private running: Promise<void> | null = null;
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

  /** Ends the collections; a collection under way ends first, putting back what it removed and has not settled. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
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
    this.running = this.collect().then(
      (more) => {
        this.running = null;
        this.wake(more || this.candidates.size > 0 ? 0 : this.deps.intervalMs);
      },
      (err: unknown) => {
        this.running = null;
        this.deps.logger.warn({ err }, 'blob collection failed; retrying');
        this.wake(this.deps.intervalMs);
      },
    );
  }

  /**
   * One collection; true when deletions are left past a full page or past the run's removal time.
   * Stays one method: one collection's steps in order (leftovers restored, the sweep read, blobs
   * removed within the lease, the check after, the sweep recorded), and its catch puts back exactly
   * what its try removed.
   */
  private async collect(): Promise<boolean> {
    const { references, storage, logger, removalLeaseMs } = this.deps;
    const now = this.deps.now ?? Date.now;
    const run = randomUUID();
    // Bytes another run kept aside, once older than the lease: that run has died or given them up
    // (it uses them within half the lease). A younger key is a live run's: never touched here.
    const leftovers = (await storage.list(REMOVALS_PREFIX)).filter((o) => now() - o.writtenAtMs > removalLeaseMs).map((o) => o.key);
    // Back first, then decided again; false: another run took them over first and put them back.
    for (const key of leftovers) await restoreBlob(storage, key, partsOfKey(key, REMOVALS_PREFIX).sha256Hex);
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
    const batch = [...new Set([...this.candidates, ...this.deferred, ...released, ...leftovers.map((key) => partsOfKey(key, REMOVALS_PREFIX).sha256Hex)])];
    this.candidates.clear();
    this.deferred.clear();
    const removed = new Map<string, { kept: string; keptAt: number }>(); // sha256 → where its bytes are kept, and since when, until settled
    let firstKeptAt = Infinity; // when this run's first copy returned: its removals stop a quarter of the lease after
    let unfinished = false;
    try {
      const referenced = await references.referenced(batch);
      const unreferenced = batch.filter((sha) => !referenced.has(sha));
      // Claimed ones are not removed (the check after the removals would put them back anyway).
      const claimed = await this.liveClaims(unreferenced);
      for (const sha of unreferenced) {
        if (claimed.has(sha)) {
          this.deferred.add(sha);
          continue;
        }
        // A quarter of the lease for removals leaves the check after them another quarter: the rest waits for the next run.
        if (this.stopped || now() - firstKeptAt > removalLeaseMs / 4) {
          unfinished = true;
          break;
        }
        const size = await storage.size(blobKeyOf(sha));
        if (size === null) continue; // removed already
        const kept = removalKeyOf(sha, run);
        await storage.copy(blobKeyOf(sha), kept, size);
        const keptAt = now();
        // Another run ages the copy from the bucket's write time: a stall or a skewed clock that makes it
        // old already there would let a takeover run beside this removal, so the blob stays, for later.
        const writtenAt = await this.writtenAt(kept);
        if (now() - writtenAt > removalLeaseMs / 4) {
          await storage.remove(kept);
          this.deferred.add(sha);
          logger.error(
            { sha256: sha, kept, age_ms: now() - writtenAt, lease_ms: removalLeaseMs },
            'blob not removed: the bucket dates the bytes kept aside for it past a quarter of the removal lease (a long copy, or clocks apart); decided again later',
          );
          continue;
        }
        removed.set(sha, { kept, keptAt });
        firstKeptAt = Math.min(firstKeptAt, keptAt);
        await storage.remove(blobKeyOf(sha));
      }
      if (this.stopped) throw new Error('the blob collector stopped during a collection: what it removed is put back');
      const { needed, claimedOnly } = await this.neededAfterRemoval([...removed.keys()]);
      let lost = 0;
      let late = 0;
      for (const [sha, { kept, keptAt }] of removed) {
        if (now() - keptAt > removalLeaseMs / 2) {
          // Past half the lease another run may take these bytes over soon: they go back, and the blob is decided
          // again (bytes gone already were taken over by a run that put them back first).
          await restoreBlob(storage, kept, sha);
          late += 1;
        } else if (!needed.has(sha)) logger.info({ sha256: sha }, 'blob removed: no file references it');
        else if (await restoreBlob(storage, kept, sha)) {
          logger.info({ sha256: sha }, 'blob kept: a definition claimed it or a file references it after all');
          if (claimedOnly.has(sha)) this.deferred.add(sha);
        } else {
          this.logLost(sha, kept);
          lost += 1;
        }
        await storage.remove(kept);
        removed.delete(sha);
      }
      if (lost > 0) throw new Error(`${lost} needed blob(s) could not be put back: their kept bytes were gone`);
      if (late > 0)
        throw new Error(`the check after the removals ran past half of the removal lease (${removalLeaseMs} ms) for ${late} blob(s): they are put back`);
    } catch (error) {
      await this.putBack(removed);
      // Released ones come back from the read model (the sweep position has not moved); others from the candidates.
      for (const sha of batch) if (!released.has(sha)) this.candidates.add(sha);
      throw error;
    }
    for (const key of leftovers) await storage.remove(key);
    if (unfinished) {
      for (const sha of batch) if (!released.has(sha)) this.candidates.add(sha);
      return true; // the sweep stays: the released ones not reached are read again
    }
    await references.recordSwept(next);
    return more;
  }

  /** When the bucket wrote a key (as another worker's collector ages it); long ago when it is gone, so nothing is removed after it. */
  private async writtenAt(key: string): Promise<number> {
    return (await this.deps.storage.list(key)).find((o) => o.key === key)?.writtenAtMs ?? -Infinity;
  }

  /** A needed blob whose kept bytes are gone: only a run past its lease can get here, and it must not pass unseen. */
  private logLost(sha: string, kept: string): void {
    this.deps.logger.error({ sha256: sha, kept }, 'blob lost: a definition or file needs it, and the bytes kept aside for it are gone');
  }

  /** After a failed collection: every blob it removed and has not settled goes back (an error per one that cannot). */
  private async putBack(removed: ReadonlyMap<string, { kept: string }>): Promise<void> {
    const { storage, logger } = this.deps;
    for (const [sha, { kept }] of removed) {
      try {
        if (await restoreBlob(storage, kept, sha)) await storage.remove(kept);
        else this.logLost(sha, kept);
      } catch (err) {
        // The kept bytes stay: a later collection takes them over once past the lease, and puts them back.
        logger.error({ err, sha256: sha, kept }, 'blob not put back after a failed collection; its bytes stay kept aside');
      }
    }
  }

  /**
   * Of blobs just removed, the ones a definition claims or a file references. The claims are
   * listed first, then their tasks asked, then the read model brought to the files log's end as
   * it is after that: a task seen finished committed any FileDefined of its before that end, so
   * the reference check counts it, and its claim is done. A claim older than the TTL is a dead
   * definition's (a live one claims again well within it). Done claims are deleted, so none keeps
   * a blob forever. `claimedOnly`: the needed ones no file references (kept for a claim alone).
   */
  private async neededAfterRemoval(removed: readonly string[]): Promise<{ needed: Set<string>; claimedOnly: Set<string> }> {
    if (removed.length === 0) return { needed: new Set(), claimedOnly: new Set() };
    const claimed = await this.liveClaims(removed);
    await this.coveredToEnd();
    const referenced = await this.deps.references.referenced(removed);
    const needed = new Set([...referenced, ...claimed]);
    const claimedOnly = new Set([...claimed].filter((sha) => !referenced.has(sha)));
    return { needed, claimedOnly };
  }

  /**
   * Of these blobs, the ones a live definition claims: a claim younger than the TTL whose task the
   * tasks read model does not show finished. The others are done (a dead definition's, or a
   * finished task's) and deleted, so none keeps a blob forever.
   */
  private async liveClaims(shas: readonly string[]): Promise<Set<string>> {
    const { storage, claimTtlMs } = this.deps;
    const now = this.deps.now ?? Date.now;
    const claims = new Map<string, { sha256: string; taskId: string }>(); // claim key → its blob and task
    const done: string[] = [];
    for (const sha of shas) {
      for (const { key, writtenAtMs } of await storage.list(`${CLAIMS_PREFIX}${sha}/`)) {
        if (now() - writtenAtMs > claimTtlMs) done.push(key);
        else claims.set(key, { sha256: sha, taskId: partsOfKey(key, CLAIMS_PREFIX).owner });
      }
    }
    const finished = claims.size === 0 ? new Set<string>() : await this.deps.tasks.finishedAmong([...new Set([...claims.values()].map((c) => c.taskId))]);
    const live = new Set<string>();
    for (const [key, { sha256, taskId }] of claims) {
      if (finished.has(taskId)) done.push(key);
      else live.add(sha256);
    }
    for (const key of done) await storage.remove(key);
    return live;
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
