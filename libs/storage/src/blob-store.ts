import type { Readable } from 'node:stream';
import type { SnapshotStore } from '@meridian/domain';
import { classify, retry, RETRY_POLICIES } from '@meridian/retry';
import { BlobWriter, DEFAULT_PARTS, type PartOptions } from './blob-writer.ts';
import { createStorage, ensureBucket, expireStaging, pingStorage, type Storage, type StorageOptions } from './client.ts';
import { copyObject } from './copy.ts';
import { createSnapshotStore } from './snapshot-store.ts';

/**
 * The service's bucket as the apps use it: the implementation of their blob-store ports
 * (apps/api/src/blob-store.ts, apps/ingest/src/blob-store.ts) and of the start-up work on the
 * bucket. Keys are paths inside the one bucket; the MinIO client stays in here.
 */
export type MinioBlobStore = {
  /** Writes bytes held in memory as one object. */
  put(key: string, bytes: Buffer): Promise<void>;
  /** A writer that streams one object in with bounded memory (BlobWriter); `abort` leaves nothing. */
  stage(key: string): BlobWriter;
  /** The object's bytes, or from `start` on, `length` of them. */
  open(key: string, range?: { readonly start: number; readonly length: number }): Promise<Readable>;
  /** The object's size, or null when there is none. */
  size(key: string): Promise<number | null>;
  /** Copies an object of `size` bytes to another key, server-side. */
  copy(fromKey: string, toKey: string, size: number): Promise<void>;
  remove(key: string): Promise<void>;
  /**
   * The objects under `prefix`: each key and when it was last written (the bucket's clock); with
   * `startAfter`, only the keys after it in key order (S3's StartAfter), so a caller that knows
   * where it stopped lists only what came since.
   */
  list(prefix: string, startAfter?: string): Promise<StoredKey[]>;
  /** Removes an unfinished multipart upload of `key` (a staging that stopped half-way). */
  removeUnfinished(key: string): Promise<void>;
  /** The snapshots of one topic's fold. */
  snapshots(topic: string): SnapshotStore;
  /** Makes the bucket exist and its staging expiry rule (0 days: none) be set. */
  ensureBucket(): Promise<void>;
  expireStaging(days: number): Promise<void>;
  ping(): Promise<void>;
};

/** A listed object: its key and when it was last written (milliseconds since the epoch, the bucket's clock). */
export type StoredKey = { readonly key: string; readonly writtenAtMs: number };

/** Whether a storage error says the object (or bucket key) does not exist. */
export function isNotFound(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === 'NoSuchKey' || code === 'NotFound';
}

export function createBlobStore(options: StorageOptions): MinioBlobStore {
  return blobStoreOver(createStorage(options), options.region, options.parts);
}

/** A blob store over a client made elsewhere (tests that also read the bucket directly). */
export function blobStoreOver(storage: Storage, region: string, parts: PartOptions = DEFAULT_PARTS): MinioBlobStore {
  const { client, bucket } = storage;
  return {
    async put(key, bytes) {
      // The same bytes under the same key are the same object, so a put that a reset connection
      // (an idle keep-alive socket MinIO closed just as it was reused) or a busy MinIO (SlowDown,
      // 503) cut short is sent again, a few times within a fraction of a second, before the
      // caller sees the failure (the api answers 503 to its client). Only such outages: a refusal
      // (access denied, no such bucket) is the caller's at once, as the CLI's retries decide.
      await retry(() => client.putObject(bucket, key, bytes, bytes.length), {
        ...RETRY_POLICIES.storagePut,
        retriable: (error) => classify(error) === 'transient',
      });
    },
    stage: (key) => new BlobWriter(storage, key, parts),
    open: (key, range) => (range ? client.getPartialObject(bucket, key, range.start, range.length) : client.getObject(bucket, key)),
    async size(key) {
      try {
        return (await client.statObject(bucket, key)).size;
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    copy: (fromKey, toKey, size) => copyObject(storage, fromKey, toKey, size),
    remove: (key) => client.removeObject(bucket, key),
    async list(prefix, startAfter) {
      const keys: StoredKey[] = [];
      // An object listed without its time counts as just written: never old enough for a collector to take over.
      for await (const item of client.listObjectsV2(bucket, prefix, true, startAfter ?? '') as AsyncIterable<{ name?: string; lastModified?: Date }>) {
        if (item.name) keys.push({ key: item.name, writtenAtMs: item.lastModified?.getTime() ?? Date.now() });
      }
      return keys;
    },
    removeUnfinished: (key) => client.removeIncompleteUpload(bucket, key),
    snapshots: (topic) => createSnapshotStore(storage, topic),
    ensureBucket: () => ensureBucket(storage, region),
    expireStaging: (days) => expireStaging(storage, days),
    ping: () => pingStorage(storage),
  };
}
