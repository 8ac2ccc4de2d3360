import type { BlobStore } from '../blob-store.ts';

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

/** One async critical section at a time: blob promotions and removals never interleave. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.then(() => undefined, () => undefined);
    return result;
  }
}
