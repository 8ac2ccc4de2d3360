import type { Readable } from 'node:stream';

/** Streams one object into the store with bounded memory; `abort` leaves nothing behind. */
export type BlobStaging = {
  write(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
  abort(): Promise<void>;
};

/**
 * What the api does with the bucket (implemented by libs/storage's MinioBlobStore): stage the
 * bytes of uploads and files, remove what a refused request staged, and stream a file's bytes.
 */
export interface BlobStore {
  put(key: string, bytes: Buffer): Promise<void>;
  stage(key: string): BlobStaging;
  open(key: string, range?: { readonly start: number; readonly length: number }): Promise<Readable>;
  remove(key: string): Promise<void>;
  /** Removes an unfinished multipart upload of `key`. */
  removeUnfinished(key: string): Promise<void>;
}
