import { CopyDestinationOptions, CopySourceOptions } from 'minio';
import type { Storage } from './client.ts';

/** S3's single-request copy limit; larger objects are copied in ranges (multipart). */
const MAX_SINGLE_COPY = 5 * 1024 * 1024 * 1024;

/** Copies an object of `size` bytes to another key of the bucket, server-side (no bytes through this process). */
export async function copyObject(storage: Storage, fromKey: string, toKey: string, size: number): Promise<void> {
  const source = new CopySourceOptions({ Bucket: storage.bucket, Object: fromKey });
  const target = new CopyDestinationOptions({ Bucket: storage.bucket, Object: toKey });
  if (size <= MAX_SINGLE_COPY) await storage.client.copyObject(source, target);
  else await storage.client.composeObject(target, [source]);
}
