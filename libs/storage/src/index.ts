export { createStorage, ensureBucket, expireStaging, pingStorage, STAGING_PREFIX, type Storage, type StorageOptions } from './client.ts';
export { BlobWriter, PART_BYTES } from './blob-writer.ts';
export { copyObject } from './copy.ts';
export { createSnapshotStore, snapshotPrefix } from './snapshot-store.ts';
export { createBlobStore, blobStoreOver, isNotFound, type MinioBlobStore } from './blob-store.ts';
