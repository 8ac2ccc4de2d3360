import type { Client } from 'minio';

/**
 * The unfinished multipart uploads under a prefix, as the erasure set knows them (what
 * minio-js' listIncompleteUploads means, without its failure on a ghost).
 *
 * Distributed MinIO lists upload ids from one local drive of the node that answers, without a
 * quorum (ListMultipartUploads in cmd/erasure-multipart.go). A node that was down while an upload
 * was completed or aborted still holds that upload's directory, and lists it until its stale-upload
 * cleanup removes it by age (MINIO_API_STALE_UPLOADS_EXPIRY, 24 h). ListParts reads with a quorum
 * and answers NoSuchUpload for such a ghost, and listIncompleteUploads, which asks ListParts of
 * every upload it lists, then throws. So each listed upload is asked about here, and ghosts dropped.
 */
export async function incompleteUploads(client: Client, bucket: string, prefix: string): Promise<Array<{ key: string; uploadId: string }>> {
  // listParts is protected in minio-js' types; it is the quorum read we need.
  const parts = client as unknown as { listParts(bucket: string, key: string, uploadId: string): Promise<unknown[]> };
  const found: Array<{ key: string; uploadId: string }> = [];
  let keyMarker = '';
  let uploadIdMarker = '';
  for (;;) {
    const page = await client.listIncompleteUploadsQuery(bucket, prefix, keyMarker, uploadIdMarker, '');
    for (const u of page.uploads) {
      try {
        await parts.listParts(bucket, u.key, u.uploadId);
        found.push({ key: u.key, uploadId: u.uploadId });
      } catch (error) {
        if ((error as { code?: string }).code !== 'NoSuchUpload') throw error;
      }
    }
    if (!page.isTruncated) return found;
    keyMarker = page.nextKeyMarker;
    uploadIdMarker = page.nextUploadIdMarker;
  }
}
