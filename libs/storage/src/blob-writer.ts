import type { Storage } from './client.ts';

/** S3's smallest part but the last; and its most parts in one upload. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
export const MAX_PARTS = 10_000;

/**
 * How a writer cuts an object into parts: `partBytes` each, and at most `partsInFlight` of
 * them uploading at once, while the next one fills. Its memory is (partsInFlight + 1) ×
 * partBytes at most, whatever the object's size.
 */
export type PartOptions = { readonly partBytes: number; readonly partsInFlight: number };

/** The settings' defaults (MERIDIAN_STORAGE_PART_BYTES, MERIDIAN_STORAGE_PARTS_IN_FLIGHT): 8 MiB × 10,000 parts allows 80 GiB; 32 MiB per upload received. */
export const DEFAULT_PARTS: PartOptions = { partBytes: 8 * 1024 * 1024, partsInFlight: 3 };

/**
 * Writes a stream into one object with bounded memory: one part buffer filling while up to
 * `partsInFlight` earlier ones upload, so reading the source and MinIO's storing of the parts
 * overlap (minio-js's own putObject of a stream of unknown size buffers parts of about 550 MB,
 * so a 200 MB upload would sit in memory whole). Small objects go up in one PUT; larger ones
 * as a multipart upload that `abort` removes without trace.
 */
export class BlobWriter {
  private readonly storage: Storage;
  private readonly key: string;
  private readonly parts: PartOptions;
  // Allocated at the first write: a request refused before its first byte (an empty file) costs no part.
  private buffer: Buffer | null = null;
  private filled = 0;
  /** Buffers of parts that finished uploading, for the next parts to fill. */
  private readonly spare: Buffer[] = [];
  private readonly inflight = new Set<Promise<void>>();
  /** The first part that failed: every later write, end() and abort() see it. */
  private failure: { readonly error: unknown } | null = null;
  private uploadId: string | null = null;
  private readonly etags: Array<{ part: number; etag: string }> = [];
  private shipped = 0;

  constructor(storage: Storage, key: string, parts: PartOptions = DEFAULT_PARTS) {
    if (parts.partBytes < MIN_PART_BYTES) throw new RangeError(`a part is at least ${MIN_PART_BYTES} bytes`);
    if (parts.partsInFlight < 1) throw new RangeError('at least one part in flight');
    this.storage = storage;
    this.key = key;
    this.parts = parts;
  }

  async write(chunk: Buffer): Promise<void> {
    this.throwIfFailed();
    const { partBytes } = this.parts;
    let at = 0;
    while (at < chunk.length) {
      this.buffer ??= this.spare.pop() ?? Buffer.allocUnsafe(partBytes);
      const n = Math.min(chunk.length - at, partBytes - this.filled);
      chunk.copy(this.buffer, this.filled, at, at + n);
      this.filled += n;
      at += n;
      if (this.filled === partBytes) await this.shipPart();
    }
  }

  /**
   * Starts the upload of the filling buffer as the next part, once fewer than partsInFlight
   * are under way, and returns: the caller reads on while it uploads.
   */
  private async shipPart(): Promise<void> {
    const { client, bucket } = this.storage;
    this.uploadId ??= await client.initiateNewMultipartUpload(bucket, this.key, {});
    while (this.inflight.size >= this.parts.partsInFlight) await Promise.race(this.inflight);
    this.throwIfFailed();
    const full = this.buffer!;
    const body = full.subarray(0, this.filled);
    const part = ++this.shipped;
    this.buffer = null;
    this.filled = 0;
    const upload: Promise<void> = client
      .uploadPart({ bucketName: bucket, objectName: this.key, uploadID: this.uploadId, partNumber: part, headers: {} }, body)
      .then(
        (r) => {
          this.etags.push({ part, etag: r.etag });
          this.spare.push(full);
        },
        (error: unknown) => {
          this.failure ??= { error };
        },
      )
      .finally(() => this.inflight.delete(upload));
    this.inflight.add(upload);
  }

  async end(): Promise<void> {
    this.throwIfFailed();
    const { client, bucket } = this.storage;
    if (this.uploadId === null) {
      await client.putObject(bucket, this.key, this.buffer?.subarray(0, this.filled) ?? Buffer.alloc(0), this.filled);
      return;
    }
    if (this.filled > 0) await this.shipPart();
    await this.settled();
    this.release();
    this.throwIfFailed();
    await client.completeMultipartUpload(
      bucket,
      this.key,
      this.uploadId,
      [...this.etags].sort((a, b) => a.part - b.part),
    );
  }

  /** Waits for the parts in flight, then removes the multipart upload: nothing is left behind. */
  async abort(): Promise<void> {
    await this.settled();
    this.release();
    if (this.uploadId !== null) await this.storage.client.abortMultipartUpload(this.storage.bucket, this.key, this.uploadId).catch(() => undefined);
  }

  /** Until no part is uploading (each one's outcome is recorded, none rejects). */
  private async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.race(this.inflight);
  }

  /**
   * Lets go of the part buffers once no part uploads: the writer itself may live on (the request
   * that made it, in the old generation) while its (partsInFlight + 1) buffers would otherwise
   * count in the api's memory until the next full collection.
   */
  private release(): void {
    this.buffer = null;
    this.spare.length = 0;
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }
}
