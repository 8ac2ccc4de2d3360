export { createStorage, ensureBucket, pingStorage, type Storage, type StorageOptions } from './client.ts';
