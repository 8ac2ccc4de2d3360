import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type busboy from 'busboy';
import { DomainError, validationError } from '@meridian/domain';
import { tooLarge } from './read-body.ts';
import { formDataFileName, multipartParser } from '../http/multipart.ts';
import type { BlobStore } from '../blob-store.ts';

export type StagedFile = { readonly objectKey: string; readonly bytes: number; readonly sha256: Buffer; readonly filename: string | null };

/**
 * Streams an uploaded file straight into the bucket while hashing and counting it: the api
 * never holds the file (MERIDIAN_STORAGE_PARTS_IN_FLIGHT + 1 parts at most). Multipart bodies give the part named `file`; any other body is the
 * file itself. Over `limit` bytes the upload stops with 413 and nothing is left in the bucket.
 */
export async function stageUpload(req: IncomingMessage, storage: BlobStore, objectKey: string, limit: number): Promise<StagedFile> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit + 64 * 1024) throw tooLarge(limit, 'the file');
  const contentType = req.headers['content-type'] ?? '';
  const file = /^multipart\/form-data/i.test(contentType) ? await multipartFile(req, limit) : { stream: req as Readable, filename: null, truncated: () => false };

  let bytes = 0;
  const hash = createHash('sha256');
  // The staging writer keeps (parts in flight + 1) parts in memory at most, whatever the file's size.
  const writer = storage.stage(objectKey);
  try {
    for await (const chunk of file.stream as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > limit || file.truncated()) throw tooLarge(limit, 'the file');
      hash.update(chunk);
      await inStorage(writer.write(chunk), 'the upload');
    }
    if (file.truncated()) throw tooLarge(limit, 'the file');
    await inStorage(writer.end(), 'the upload');
  } catch (error) {
    req.resume();
    await writer.abort();
    await discard(storage, objectKey);
    if (error instanceof DomainError) throw error;
    if (req.destroyed || (error as { code?: string }).code === 'ECONNRESET') throw validationError('the upload was interrupted');
    throw error;
  }
  return { objectKey, bytes, sha256: hash.digest(), filename: file.filename };
}

/**
 * Stages a body the api holds already (a JSON upload, checked in memory) under `objectKey`, as
 * stageUpload stages a stream. Storage unreachable → 503, and nothing is left in the bucket.
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
  return !(refusal instanceof DomainError && refusal.code === 'unavailable');
}

/** Removes a staged object and any unfinished multipart upload of it. */
export async function discard(storage: BlobStore, objectKey: string): Promise<void> {
  await storage.removeUnfinished(objectKey).catch(() => undefined);
  await storage.remove(objectKey).catch(() => undefined);
}

type FilePart = { stream: Readable; filename: string | null; truncated: () => boolean };

/** The `file` part of a multipart body, as a stream; other parts are drained and ignored. */
function multipartFile(req: IncomingMessage, limit: number): Promise<FilePart> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = multipartParser(req.headers, { files: 1, fileSize: limit, fields: 20, parts: 30 });
    } catch (error) {
      reject(validationError(`malformed multipart body: ${(error as Error).message}`));
      return;
    }
    let settled = false;
    parser.on('file', (name, stream, info) => {
      if (name !== 'file' || settled) {
        stream.resume();
        return;
      }
      settled = true;
      let truncated = false;
      stream.on('limit', () => { truncated = true; });
      // The part stream ends when busboy has read it; errors of the request reach it through the parser.
      const out = new PassThrough();
      stream.pipe(out);
      parser.on('error', (e: Error) => out.destroy(e));
      resolve({ stream: out, filename: formDataFileName(info.filename), truncated: () => truncated });
    });
    parser.on('error', (e: Error) => {
      if (!settled) reject(validationError(`malformed multipart body: ${e.message}`));
    });
    parser.on('close', () => {
      if (!settled) reject(validationError('the multipart body has no part named "file"', [{ field: 'file', reason: 'required' }]));
    });
    req.on('aborted', () => parser.destroy(new Error('request aborted')));
    req.pipe(parser);
  });
}
