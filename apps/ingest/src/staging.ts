import type { Logger } from '@meridian/observability';
import type { BlobStore } from './blob-store.ts';

/**
 * Removes a command's staged bytes once its task has ended. A failure only leaves them to the
 * staging expiry rule (MERIDIAN_STAGING_EXPIRY_DAYS): it is logged, never thrown.
 */
export async function removeStaged(storage: BlobStore, objectKey: string, logger: Logger): Promise<void> {
  await storage.remove(objectKey).catch((err: unknown) => logger.warn({ err, key: objectKey }, 'staged object not removed'));
}
