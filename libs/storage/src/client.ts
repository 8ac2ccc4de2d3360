import { Client } from 'minio';
import type { PartOptions } from './blob-writer.ts';

export type StorageOptions = {
  readonly endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly region: string;
  readonly bucket: string;
  /** How staged objects are cut into parts (DEFAULT_PARTS when absent). */
  readonly parts?: PartOptions;
};

export type Storage = { readonly client: Client; readonly bucket: string };

export function createStorage(options: StorageOptions): Storage {
  const url = new URL(options.endpoint);
  const useSSL = url.protocol === 'https:';
  const client = new Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    region: options.region,
    pathStyle: true,
  });
  // Request bodies are sent as UNSIGNED-PAYLOAD over plain HTTP too, as minio-js does over
  // HTTPS: otherwise it hashes every part (SHA-256) on the api's one thread to sign it, and
  // MinIO hashes it again to check, a second pass over every uploaded byte on each side (the
  // api hashes the body once anyway, for Idempotency-Key). The signed hash protected nothing
  // end to end: S3 responses are never signed, so whoever can alter bytes on a plain-HTTP path
  // to MinIO alters the reads too; integrity against the network is TLS's (https endpoint).
  client.enableSHA256 = false;
  return { client, bucket: options.bucket };
}

export async function ensureBucket(storage: Storage, region: string): Promise<void> {
  if (!(await storage.client.bucketExists(storage.bucket))) {
    try {
      await storage.client.makeBucket(storage.bucket, region);
    } catch (error) {
      // Another process created it between the check and the call: that is what we wanted.
      if ((error as { code?: string }).code !== 'BucketAlreadyOwnedByYou') throw error;
    }
  }
}

/**
 * Staged bytes (claim checks of uploads, files before promotion) expire after `days`: the
 * worker removes them once their task ends, so what stays is a command refused with 503 that
 * never reached the log, or one stranded by a crash. 0 keeps them. Idempotent.
 */
export async function expireStaging(storage: Storage, days: number): Promise<void> {
  if (days === 0) {
    await storage.client.setBucketLifecycle(storage.bucket, null);
    return;
  }
  await storage.client.setBucketLifecycle(storage.bucket, {
    Rule: [
      {
        ID: 'meridian-staging-expiry',
        Status: 'Enabled',
        Filter: { Prefix: STAGING_PREFIX },
        Expiration: { Days: days },
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: days },
      },
    ],
  });
}

/** Where the api stages uploads and files (staging/uploads/…, staging/files/…). */
export const STAGING_PREFIX = 'staging/';

/** Readiness probe: the bucket answers. */
export async function pingStorage(storage: Storage): Promise<void> {
  await storage.client.bucketExists(storage.bucket);
}
