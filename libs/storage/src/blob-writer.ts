import type { Storage } from './client.ts';

/** Bytes per multipart part: S3's minimum is 5 MiB (except the last); 8 MiB × 10,000 parts allows 80 GiB. */
export const PART_BYTES = 8 * 1024 * 1024;

/**
 * Writes a stream into one object with bounded memory: two part buffers, one filling while
 * the other uploads. (minio-js's own putObject of a stream of unknown size buffers parts of
 * about 550 MB, so a 200 MB upload would sit in memory whole.) Small objects go up in one
 * PUT; larger ones as a multipart upload that `abort` removes without trace.
 */
export class BlobWriter {
  private readonly storage: Storage;
  private readonly key: string;
  private readonly partBytes: number;
  // Allocated at the first write: a request refused before its first byte (an empty file) costs no 8 MiB.
  private buffer: Buffer | null = null;
  private spare: Buffer | null = null;
  private filled = 0;
  private uploadId: string | null = null;
  private readonly etags: Array<{ part: number; etag: string }> = [];
  private inflight: Promise<void> | null = null;
  private parts = 0;

  constructor(storage: Storage, key: string, partBytes = PART_BYTES) {
    this.storage = storage;
    this.key = key;
    this.partBytes = partBytes;
  }

  async write(chunk: Buffer): Promise<void> {
    let at = 0;
    while (at < chunk.length) {
      this.buffer ??= Buffer.allocUnsafe(this.partBytes);
      const n = Math.min(chunk.length - at, this.partBytes - this.filled);
      chunk.copy(this.buffer, this.filled, at, at + n);
      this.filled += n;
      at += n;
      if (this.filled === this.partBytes) await this.shipPart(this.partBytes);
    }
  }

  /** Uploads the buffer's first `length` bytes as the next part, and swaps in the other buffer to fill meanwhile. */
  private async shipPart(length: number): Promise<void> {
    const { client, bucket } = this.storage;
    this.uploadId ??= await client.initiateNewMultipartUpload(bucket, this.key, {});
    await this.inflight; // at most one part in flight: the previous one must be done before its buffer is reused
    const full = this.buffer!;
    const body = full.subarray(0, length);
    const part = ++this.parts;
    const uploadID = this.uploadId;
    this.buffer = this.spare ?? Buffer.allocUnsafe(this.partBytes);
    this.spare = null;
    this.filled = 0;
    this.inflight = client.uploadPart({ bucketName: bucket, objectName: this.key, uploadID, partNumber: part, headers: {} }, body).then((r) => {
      this.etags.push({ part, etag: r.etag });
      this.spare = full;
    });
    // A failed part surfaces at the next write or at end(); keep it from being unhandled meanwhile.
    this.inflight.catch(() => undefined);
  }

  async end(): Promise<void> {
    const { client, bucket } = this.storage;
    if (this.uploadId === null) {
      await client.putObject(bucket, this.key, this.buffer?.subarray(0, this.filled) ?? Buffer.alloc(0), this.filled);
      return;
    }
    if (this.filled > 0) await this.shipPart(this.filled);
    await this.inflight;
    await client.completeMultipartUpload(bucket, this.key, this.uploadId, [...this.etags].sort((a, b) => a.part - b.part));
  }

  /** Waits for the part in flight, then removes the multipart upload: nothing is left behind. */
  async abort(): Promise<void> {
    await this.inflight?.catch(() => undefined);
    if (this.uploadId !== null) await this.storage.client.abortMultipartUpload(this.storage.bucket, this.key, this.uploadId).catch(() => undefined);
  }
}
