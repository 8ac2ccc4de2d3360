import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { DomainError, InfrastructureError, validationError } from '@meridian/domain';
import { readForm } from '../http/multipart.ts';
import type { BlobStore } from '../blob-store.ts';

/** The most bytes a staged file may have, and the error to answer when it has more. */
export type FileLimit = { readonly bytes: number; readonly tooLarge: () => DomainError };

export type StagedFile = {
  /** Where the file is staged; nothing is when `bytes` is 0. */
  readonly objectKey: string;
  readonly bytes: number;
  readonly sha256: Buffer;
  readonly filename: string | null;
  readonly mimeType: string | null;
};

export type StagedForm = StagedFile & {
  /** The form's text fields, whether they came before or after the file. */
  readonly fields: ReadonlyMap<string, string>;
};

/** Room for the multipart framing and text fields when judging a body by its Content-Length. */
const FORM_OVERHEAD = 1024 * 1024;

/** A body that declares more bytes than `limit` allows (with room for a form's framing) is refused before any is read. */
export function assertDeclaredSize(req: IncomingMessage, limit: FileLimit): void {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit.bytes + FORM_OVERHEAD) throw limit.tooLarge();
}

export const isMultipart = (req: IncomingMessage): boolean => /^multipart\/form-data/i.test(req.headers['content-type'] ?? '');

/**
 * Streams a multipart form's `file` part into the bucket at `objectKey` while hashing and
 * counting it; the other parts are text fields, kept. The limit is decided when the file part
 * starts, from the fields seen so far (`limitFor`), and enforced as the bytes arrive: over it,
 * the upload stops at once with its error. On any failure (a limit, a cut-off or malformed
 * body, a client gone, storage failing) nothing is left in the bucket: no object, no
 * unfinished multipart upload. The api never holds the file: the staging writer keeps
 * MERIDIAN_STORAGE_PARTS_IN_FLIGHT + 1 parts in memory at most.
 */
export async function stageForm(
  req: IncomingMessage,
  storage: BlobStore,
  objectKey: string,
  what: string,
  limitFor: (fields: ReadonlyMap<string, string>) => FileLimit,
): Promise<StagedForm> {
  if (!isMultipart(req)) {
    throw validationError('the body must be multipart/form-data with a part named "file"', [{ field: 'file', reason: 'required' }]);
  }
  try {
    const form = await readForm(req, req.headers, {
      requireFile: true,
      receive: async (part, fields) => ({
        ...(await streamToBucket(part.stream, storage, objectKey, what, limitFor(fields))),
        filename: part.filename,
        mimeType: part.mimeType,
      }),
    });
    return { ...form.file!, objectKey, fields: form.fields };
  } catch (error) {
    await discard(storage, objectKey);
    throw error;
  }
}

/** Streams a whole request body, the file itself, into the bucket as stageForm stages a form's file part. */
export async function stageBody(req: IncomingMessage, storage: BlobStore, objectKey: string, what: string, limit: FileLimit): Promise<StagedFile> {
  try {
    const staged = await streamToBucket(req, storage, objectKey, what, limit);
    return { ...staged, objectKey, filename: null, mimeType: null };
  } catch (error) {
    // Read what is left (and drop it) so the answer can follow.
    if (!req.destroyed) req.resume();
    await discard(storage, objectKey);
    if (error instanceof DomainError) throw error;
    if (req.destroyed || (error as { code?: string }).code === 'ECONNRESET') throw validationError('the upload was interrupted before its end');
    throw error;
  }
}

/** `what` names the request in a 503 ("the upload", "the file"). */
async function streamToBucket(
  stream: Readable,
  storage: BlobStore,
  objectKey: string,
  what: string,
  limit: FileLimit,
): Promise<{ bytes: number; sha256: Buffer }> {
  const hash = createHash('sha256');
  const writer = storage.stage(objectKey);
  let bytes = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > limit.bytes) throw limit.tooLarge();
      hash.update(chunk);
      await inStorage(writer.write(chunk), what);
    }
    // An empty file stages nothing: the caller refuses it without a round trip to storage.
    if (bytes > 0) await inStorage(writer.end(), what);
  } catch (error) {
    await writer.abort();
    throw error;
  }
  return { bytes, sha256: hash.digest() };
}

/**
 * Stages a body the api holds already (a JSON upload, checked in memory) under `objectKey`, as
 * stageForm stages a stream. Storage unreachable → 503, and nothing is left in the bucket.
 */
export async function stageBytes(storage: BlobStore, objectKey: string, bytes: Buffer): Promise<void> {
  try {
    await inStorage(storage.put(objectKey, bytes), 'the upload');
  } catch (error) {
    await discard(storage, objectKey);
    throw error;
  }
}

/**
 * A call to the bucket while a request's body is staged: any failure of it (unreachable,
 * refusing, timing out) is the storage's, not the client's, so it is 503 `unavailable` with
 * Retry-After, and the client sends the same request again later. Failures of reading the
 * request itself stay apart (an interrupted upload, a body over its limit).
 */
export async function inStorage<T>(call: Promise<T>, what: string): Promise<T> {
  try {
    return await call;
  } catch (cause) {
    throw new DomainError('unavailable', `storage is not reachable; ${what} was not accepted, retry later`, [], { cause });
  }
}

/**
 * Whether the staged bytes of a refused upload can go. Not after a 503 from the log: kafkajs
 * keeps retrying a send it stopped waiting for, so the command may still land and need them
 * (the worker removes them once the task ends).
 */
export function mayDiscard(refusal: unknown): boolean {
  return !((refusal instanceof DomainError && refusal.code === 'unavailable') || (refusal instanceof InfrastructureError && refusal.retriable));
}

/** Removes a staged object and any unfinished multipart upload of it. */
export async function discard(storage: BlobStore, objectKey: string): Promise<void> {
  await storage.removeUnfinished(objectKey).catch(() => undefined);
  await storage.remove(objectKey).catch(() => undefined);
}
