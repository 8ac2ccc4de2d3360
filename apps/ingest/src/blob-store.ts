import type { Readable } from 'node:stream';

/**
 * What the worker does with the bucket (implemented by libs/storage's MinioBlobStore): read
 * staged bytes, promote them to their content address, remove staged bytes and unused blobs.
 */
export interface BlobStore {
  open(key: string): Promise<Readable>;
  /** The object's size, or null when there is none. */
  size(key: string): Promise<number | null>;
  /** Copies an object of `size` bytes to another key, server-side. */
  copy(fromKey: string, toKey: string, size: number): Promise<void>;
  remove(key: string): Promise<void>;
  /** Writes bytes held in memory as one object (a blob claim: a few bytes). */
  put(key: string, bytes: Buffer): Promise<void>;
  /** The objects under `prefix` (blob claims and removals: few at a time), each with when it was written. */
  list(prefix: string): Promise<StoredKey[]>;
}

/** A listed object: its key and when it was last written (milliseconds since the epoch, the bucket's clock). */
export type StoredKey = { readonly key: string; readonly writtenAtMs: number };
