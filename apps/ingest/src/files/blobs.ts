import { copyObject, type Storage } from '@meridian/storage';

export function isNotFound(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === 'NoSuchKey' || code === 'NotFound';
}

/** Size of an object, or null when there is none. */
export async function objectSize(storage: Storage, key: string): Promise<number | null> {
  try {
    return (await storage.client.statObject(storage.bucket, key)).size;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * Puts the staged bytes at their content address, server-side (no bytes through this
 * process). Content-addressed, so an existing blob of the right size is already the same
 * bytes: a second file with the same content, or a redelivered command, copies nothing.
 */
export async function promoteBlob(storage: Storage, stagedKey: string, blobKey: string, size: number): Promise<'copied' | 'present'> {
  if ((await objectSize(storage, blobKey)) === size) return 'present';
  await copyObject(storage, stagedKey, blobKey, size);
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
