import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type busboy from 'busboy';
import { type DomainError, validationError } from '@meridian/domain';
import type { BlobStore } from '../blob-store.ts';
import { discard, inStorage } from '../uploads/stage-file.ts';
import { formDataFileName, multipartParser } from '../http/multipart.ts';

/** The most bytes the file part may have, and the error to answer when it has more. */
export type FileLimit = { readonly bytes: number; readonly tooLarge: () => DomainError };

export type StagedForm = {
  /** The form's text fields, whether they came before or after the file. */
  readonly fields: ReadonlyMap<string, string>;
  /** Where the file part is staged; nothing is when `bytes` is 0. */
  readonly objectKey: string;
  readonly bytes: number;
  readonly sha256: Buffer;
  readonly filename: string | null;
  readonly mimeType: string | null;
};

const MAX_FIELD_BYTES = 64 * 1024;

/**
 * Streams a multipart form's `file` part into the bucket at `objectKey` while hashing and
 * counting it; the other parts are text fields, kept. The limit is decided when the file
 * part starts, from the fields seen so far (`limitFor`), and enforced as the bytes arrive:
 * over it, the upload stops at once with its error and nothing is left in the bucket (no
 * object, no unfinished multipart upload). Any other failure cleans up the same way.
 */
export function stageForm(req: IncomingMessage, storage: BlobStore, objectKey: string, limitFor: (fields: ReadonlyMap<string, string>) => FileLimit): Promise<StagedForm> {
  if (!/^multipart\/form-data\s*;/i.test(req.headers['content-type'] ?? '')) {
    return Promise.reject(validationError('the body must be multipart/form-data with a part named "file"', [{ field: 'file', reason: 'required' }]));
  }
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = multipartParser(req.headers, { fields: 20, files: 5, parts: 30, fieldSize: MAX_FIELD_BYTES, fieldNameSize: 200 });
    } catch (error) {
      reject(validationError(`malformed multipart body: ${(error as Error).message}`));
      return;
    }
    const fields = new Map<string, string>();
    let filePart: Readable | null = null;
    let staging: Promise<Omit<StagedForm, 'fields'>> | null = null;
    let settled = false;

    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      // Stop reading: the rest of the body is drained, not parsed.
      req.unpipe(parser);
      req.resume();
      const stopped = staging ? staging.then(() => undefined, () => undefined) : Promise.resolve();
      filePart?.destroy(error instanceof Error ? error : new Error(String(error)));
      void stopped.then(() => (staging ? discard(storage, objectKey) : undefined)).finally(() => reject(error instanceof Error ? error : new Error(String(error))));
    };

    parser.on('field', (name, value, info) => {
      if (!name) return; // a part without a name is no field of ours
      if (info.nameTruncated || info.valueTruncated) return fail(validationError(`the form field ${JSON.stringify(name)} is longer than ${MAX_FIELD_BYTES} bytes`, [{ field: name, reason: 'too long' }]));
      if (fields.has(name)) return fail(validationError(`the form field ${JSON.stringify(name)} is given twice`, [{ field: name, reason: 'duplicate' }]));
      fields.set(name, value);
    });
    parser.on('file', (name, stream, info) => {
      if (settled || name !== 'file') {
        stream.resume();
        return;
      }
      if (staging) {
        stream.resume();
        return fail(validationError('the form has more than one part named "file"', [{ field: 'file', reason: 'only one file per request' }]));
      }
      let limit: FileLimit;
      try {
        limit = limitFor(fields);
      } catch (error) {
        stream.resume();
        return fail(error);
      }
      filePart = stream;
      staging = streamToBucket(stream, storage, objectKey, limit).then((r) => ({ ...r, objectKey, filename: formDataFileName(info.filename), mimeType: info.mimeType ?? null }));
      staging.catch(fail); // over the limit (or a storage failure): answer at once
    });
    parser.on('partsLimit', () => fail(validationError('the form has too many parts')));
    parser.on('filesLimit', () => fail(validationError('the form has too many file parts')));
    parser.on('fieldsLimit', () => fail(validationError('the form has too many fields')));
    parser.on('error', (e: Error) => fail(validationError(`malformed multipart body: ${e.message}`)));
    parser.on('close', () => {
      if (settled) return;
      if (!staging) return fail(validationError('the multipart body has no part named "file"', [{ field: 'file', reason: 'required' }]));
      staging.then((file) => {
        if (settled) return;
        settled = true;
        resolve({ ...file, fields });
      }, fail);
    });
    req.on('aborted', () => parser.destroy(new Error('the upload was interrupted')));
    req.pipe(parser);
  });
}

async function streamToBucket(stream: Readable, storage: BlobStore, objectKey: string, limit: FileLimit): Promise<{ bytes: number; sha256: Buffer }> {
  const hash = createHash('sha256');
  const writer = storage.stage(objectKey);
  let bytes = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > limit.bytes) throw limit.tooLarge();
      hash.update(chunk);
      await inStorage(writer.write(chunk), 'the file');
    }
    // An empty file part stages nothing: the caller refuses it without a round trip to storage.
    if (bytes > 0) await inStorage(writer.end(), 'the file');
  } catch (error) {
    await writer.abort();
    throw error;
  }
  return { bytes, sha256: hash.digest() };
}
