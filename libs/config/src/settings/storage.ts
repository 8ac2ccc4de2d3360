import { z } from 'zod';

/** The bucket holding staged uploads and file blobs. */
export const storageSettings = {
  S3_ENDPOINT: { schema: z.url(), default: 'http://127.0.0.1:19900', doc: 'S3-compatible endpoint (MinIO).' },
  S3_ACCESS_KEY: { schema: z.string().min(1), default: 'meridian', doc: 'S3 access key.' },
  S3_SECRET_KEY: { schema: z.string().min(1), default: 'meridian-local-secret', doc: 'S3 secret key (never logged).' },
  S3_REGION: { schema: z.string().min(1), default: 'us-east-1', doc: 'S3 region.' },
  S3_BUCKET: {
    schema: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'an S3 bucket name'),
    default: 'meridian',
    doc: 'Bucket for staged uploads and file blobs; created at start.',
  },
  MERIDIAN_STAGING_EXPIRY_DAYS: {
    schema: z.coerce.number().int().min(0).max(3650),
    default: '7',
    doc: 'Days after which staged bytes left behind (an upload refused with 503, a crash) expire in the bucket; 0 keeps them. Applied as a bucket lifecycle rule at start.',
  },
  MERIDIAN_STORAGE_PART_BYTES: {
    schema: z.coerce
      .number()
      .int()
      .min(5 * 1024 * 1024)
      .max(5 * 1024 ** 3),
    default: '8388608',
    doc: 'Size of each part of a multipart upload when the api streams a file (a metrics file or a defined file) into the bucket; S3 allows 5 MiB to 5 GiB and 10,000 parts, so MERIDIAN_MAX_UPLOAD_BYTES must fit in 10,000 of them. The api holds (MERIDIAN_STORAGE_PARTS_IN_FLIGHT + 1) parts per upload it is receiving.',
  },
  MERIDIAN_STORAGE_PARTS_IN_FLIGHT: {
    schema: z.coerce.number().int().min(1).max(64),
    default: '3',
    doc: "Most parts of one file the api uploads to the bucket at once while it reads the next: reading the request and MinIO's storing overlap. Past it the api stops reading the request until a part is stored (backpressure on the client).",
  },
} as const;
