import { randomUUID } from 'node:crypto';
import { blobKeyOf } from '@meridian/domain';
import { isNotFound } from '@meridian/storage';
import type { Logger } from '@meridian/observability';
import type { BlobStore } from '../blob-store.ts';

/**
 * A definition's claim on its blob, written before it looks whether the bytes are already there
 * and removed once its FileDefined is committed: a blob collector on any worker that removed the
 * blob meanwhile sees it and puts the bytes back (./blob-collector.ts). Named by the task, so a
 * collector can drop the claim of a task that has finished (a removal that failed, a crash), and
 * by the claim pass: two runs of one task can overlap (a worker kicked from the group and the one
 * that reruns the task), and one releasing its claim must not release the other's.
 */
export const CLAIMS_PREFIX = '_blob-claims/';
/** Every claim a task's runs may have written on a blob (the prefix of their keys). */
export const claimsOfTask = (sha256Hex: string, taskId: string): string => `${CLAIMS_PREFIX}${sha256Hex}/${taskId}/`;
export const claimKeyOf = (sha256Hex: string, taskId: string, pass: string): string => `${claimsOfTask(sha256Hex, taskId)}${pass}`;

/**
 * A removed blob's bytes, kept by the collection that removed it until its check after the
 * removal says nothing needs them: one key per collection run, used by that run only within half
 * of MERIDIAN_BLOB_REMOVAL_LEASE_MS, taken over by another only once older than the whole lease.
 */
export const REMOVALS_PREFIX = '_blob-removals/';
export const removalKeyOf = (sha256Hex: string, run: string): string => `${REMOVALS_PREFIX}${sha256Hex}/${run}`;

/** The SHA-256 (hex) and the part after it (a claim's task, a removal's run) a claim or removal key names. */
export function partsOfKey(key: string, prefix: string): { sha256Hex: string; owner: string } {
  const [sha256Hex = '', owner = ''] = key.slice(prefix.length).split('/');
  return { sha256Hex, owner };
}

/**
 * Puts the staged bytes at their content address, server-side (no bytes through this
 * process). Content-addressed, so an existing blob of the right size is already the same
 * bytes: a second file with the same content, or a redelivered command, copies nothing.
 */
export async function promoteBlob(storage: BlobStore, stagedKey: string, blobKey: string, size: number): Promise<'copied' | 'present'> {
  if ((await storage.size(blobKey)) === size) return 'present';
  await storage.copy(stagedKey, blobKey, size);
  return 'copied';
}

/** What a definition promotes: its blob's SHA-256 (hex), its task, its staged object and size. */
export type PromotionTarget = { readonly sha256Hex: string; readonly taskId: string; readonly stagedKey: string; readonly size: number };

/**
 * A definition whose commit would come past half of MERIDIAN_BLOB_CLAIM_TTL_MS after its claim (a
 * pause between the look and the commit): a collector may take the claim for a dead one's, so the
 * transaction is not committed, and the run is retried (it claims and looks again).
 */
export class ClaimTooOldError extends Error {
  override readonly name = 'ClaimTooOld';
  readonly retriable = true;
}

/**
 * A definition's promotion and commit under a claim on its blob. The claim is written before
 * the look, and removed once `commit` has committed the FileDefined, or when it failed before
 * committing (then the FileDefined never counts). `commit` calls `committing` as the last step
 * before its commit: a commit that failed may still land, so then the claim stays, for the retry
 * to write again or a collector to drop once the task has finished.
 *
 * A collector takes a claim older than `claimTtlMs` for a dead definition's, so a look that
 * ended past half of it is claimed and done again, and `committing` throws ClaimTooOldError
 * (retriable: the transaction aborts, the run claims and looks again) once the claim is past half
 * of it: the commit follows a claim younger than that, its bytes there.
 * Each pass writes a new key, then removes the last one: a collector's cleanup that listed the
 * old key as past its TTL then deletes that one, never the claim the commit follows.
 * Removing the claim after the commit is best effort and outside the caller's retried work: a
 * storage blip then must not run a committed definition again.
 */
export async function promoteUnderClaim(
  storage: BlobStore,
  target: PromotionTarget,
  rules: { readonly claimTtlMs: number; readonly logger: Logger },
  commit: (committing: () => void) => Promise<void>,
): Promise<'copied' | 'present'> {
  let claim: string | null = null;
  let claimedAt = 0;
  let committing = false;
  let how: 'copied' | 'present';
  try {
    for (;;) {
      claimedAt = Date.now();
      const previous = claim;
      claim = claimKeyOf(target.sha256Hex, target.taskId, randomUUID());
      await storage.put(claim, Buffer.alloc(0));
      if (previous) await releaseClaim(storage, previous, rules.logger);
      how = await promoteBlob(storage, target.stagedKey, blobKeyOf(target.sha256Hex), target.size);
      if (Date.now() - claimedAt <= rules.claimTtlMs / 2) break;
    }
    await commit(() => {
      const age = Date.now() - claimedAt;
      if (age > rules.claimTtlMs / 2) {
        throw new ClaimTooOldError(
          `the claim on blob ${target.sha256Hex} was ${age} ms old at the commit, past half of MERIDIAN_BLOB_CLAIM_TTL_MS (${rules.claimTtlMs} ms): not committed, claimed and looked at again`,
        );
      }
      committing = true;
    });
  } catch (error) {
    if (!committing && claim) await releaseClaim(storage, claim, rules.logger);
    throw error;
  }
  await releaseClaim(storage, claim, rules.logger);
  return how;
}

/**
 * Removes a definition's claim, best effort: one left behind keeps its blob only until a
 * collector finds its task finished or the claim past MERIDIAN_BLOB_CLAIM_TTL_MS.
 */
async function releaseClaim(storage: BlobStore, claim: string, logger: Logger): Promise<void> {
  await storage
    .remove(claim)
    .catch((err: unknown) => logger.warn({ err, claim }, 'blob claim not removed; a blob collector drops it once its task has finished'));
}

/**
 * Removes every claim of a task on a blob, best effort: what a definition's give-up or refusal
 * does, once its task has failed (every other run of it is fenced, so none commits after).
 */
export async function releaseClaimsOfTask(storage: BlobStore, sha256Hex: string, taskId: string, logger: Logger): Promise<void> {
  const prefix = claimsOfTask(sha256Hex, taskId);
  try {
    for (const { key } of await storage.list(prefix)) await storage.remove(key);
  } catch (err) {
    logger.warn({ err, claims: prefix }, 'blob claims not removed; a blob collector drops them once it sees the task finished');
  }
}

/** Copies `fromKey` to the blob of `sha256Hex`; false when `fromKey` is gone (whoever removed it restored it first). */
export async function restoreBlob(storage: BlobStore, fromKey: string, sha256Hex: string): Promise<boolean> {
  const size = await storage.size(fromKey);
  if (size === null) return false;
  try {
    await storage.copy(fromKey, blobKeyOf(sha256Hex), size);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
