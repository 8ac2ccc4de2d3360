import { blobKeyOf } from '@meridian/domain';
import { isNotFound } from '@meridian/storage';
import type { BlobStore } from '../blob-store.ts';

/**
 * A definition's claim on its blob, written before it looks whether the bytes are already there
 * and removed once its FileDefined is committed: a blob collector on any worker that removed the
 * blob meanwhile sees it and puts the bytes back (./blob-collector.ts).
 */
export const CLAIMS_PREFIX = '_blob-claims/';
export const claimKeyOf = (sha256Hex: string, fileId: string): string => `${CLAIMS_PREFIX}${sha256Hex}/${fileId}`;

/**
 * A removed blob's bytes, kept by the collection that removed it until its check after the
 * removal says nothing needs them (one key per collection run, so that none deletes another's).
 */
export const REMOVALS_PREFIX = '_blob-removals/';
export const removalKeyOf = (sha256Hex: string, run: string): string => `${REMOVALS_PREFIX}${sha256Hex}/${run}`;

/** The SHA-256 (hex) a claim or removal key names. */
export const shaOfKey = (key: string, prefix: string): string => key.slice(prefix.length).split('/')[0]!;

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

/** What a definition promotes: its blob's SHA-256 (hex), its file, its staged object and size. */
export type PromotionTarget = { readonly sha256Hex: string; readonly fileId: string; readonly stagedKey: string; readonly size: number };

/**
 * A definition's promotion and commit under a claim on its blob. The claim is written before
 * the look, and removed once `commit` has committed the FileDefined, or when it failed before
 * committing (then the FileDefined never counts). `commit` calls `committing` just before its
 * commit: a commit that failed may still land, so then the claim stays, for the retry to write
 * again or the task's failure to remove.
 */
export async function promoteUnderClaim(storage: BlobStore, target: PromotionTarget, commit: (committing: () => void) => Promise<void>): Promise<'copied' | 'present'> {
  const claim = claimKeyOf(target.sha256Hex, target.fileId);
  await storage.put(claim, Buffer.alloc(0));
  let committing = false;
  let how: 'copied' | 'present';
  try {
    how = await promoteBlob(storage, target.stagedKey, blobKeyOf(target.sha256Hex), target.size);
    await commit(() => {
      committing = true;
    });
  } catch (error) {
    if (!committing) await storage.remove(claim);
    throw error;
  }
  await storage.remove(claim);
  return how;
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
