import type busboy from 'busboy';
import { Readable } from 'node:stream';
import { DomainError, validationError } from '@meridian/domain';
import { multipartParser } from '../http/multipart.ts';

/**
 * The JSON text of a metrics upload. Clients send it as application/json, and also — as the
 * seed's own sample does — declared as multipart/form-data while the body is the JSON text.
 * A real multipart body is accepted too: its first part (file or field) holds the JSON.
 */
export async function jsonUploadText(raw: Buffer, contentType: string): Promise<Buffer> {
  const first = firstNonSpace(raw);
  if (first === 0x7b /* { */ || first === 0x5b /* [ */) return raw;
  if (/^multipart\/form-data/i.test(contentType) && /boundary=/i.test(contentType)) {
    const part = await firstMultipartPart(raw, contentType);
    if (part) return part;
  }
  throw validationError('the body must be a JSON object {"metric_name": ..., "values": [{"timestamp": ..., "value": ...}]}', [{ field: 'body', reason: 'not JSON' }]);
}

function firstNonSpace(buf: Buffer): number | undefined {
  for (const b of buf) if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return b;
  return undefined;
}

function firstMultipartPart(raw: Buffer, contentType: string): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = multipartParser({ 'content-type': contentType }, { files: 1, fields: 1 });
    } catch {
      resolve(null);
      return;
    }
    let found: Buffer | null = null;
    parser.on('field', (_name, value) => { found ??= Buffer.from(value); });
    parser.on('file', (_name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => { found ??= Buffer.concat(chunks); });
    });
    parser.on('close', () => resolve(found));
    parser.on('error', () => reject(new DomainError('validation', 'malformed multipart body')));
    Readable.from([raw]).pipe(parser);
  });
}
