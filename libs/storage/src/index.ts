export { createStorage, ensureBucket, expireStaging, pingStorage, STAGING_PREFIX, type Storage, type StorageOptions } from './client.ts';
export { BlobWriter, DEFAULT_PARTS, MAX_PARTS, MIN_PART_BYTES, type PartOptions } from './blob-writer.ts';
export { copyObject } from './copy.ts';
export { createSnapshotStore, snapshotPrefix } from './snapshot-store.ts';
export { createBlobStore, blobStoreOver, isNotFound, type MinioBlobStore } from './blob-store.ts';
