export { createStorage, ensureBucket, pingStorage, type Storage, type StorageOptions } from './client.ts';
export { BlobWriter, PART_BYTES } from './blob-writer.ts';
