import { Readable } from 'node:stream';
import { validationError } from '@meridian/domain';
import { FORM_LIMITS, readForm } from '../http/multipart.ts';

/**
 * The JSON text of a metrics upload. Clients send it as application/json, and also — as the
 * seed's own sample does — declared as multipart/form-data while the body is the JSON text.
 * A real multipart body is accepted too: the JSON is its part named `file` (a file or a text
 * field), or its only text field. A UTF-8 byte order mark is dropped (RFC 8259 lets a parser
 * ignore it; Windows tools write one); UTF-16 and UTF-32 are refused by name.
 */
export async function jsonUploadText(raw: Buffer, contentType: string): Promise<Buffer> {
  const body = withoutUtf8Bom(raw);
  assertUtf8(body);
  const first = firstNonSpace(body);
  if (first === 0x7b /* { */ || first === 0x5b /* [ */) return body;
  if (/^multipart\/form-data/i.test(contentType) && /boundary=/i.test(contentType)) {
    const part = await jsonPart(body, contentType);
    if (part) return jsonUploadText(part, 'application/json');
  }
  throw validationError('the body must be a JSON object {"metric_name": ..., "values": [{"timestamp": ..., "value": ...}]}', [
    { field: 'body', reason: 'not JSON' },
  ]);
}

function withoutUtf8Bom(raw: Buffer): Buffer {
  return raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw;
}

/** JSON in UTF-16 or UTF-32 (a BOM, or the zero bytes around the first ASCII character) is named, not misread. */
function assertUtf8(body: Buffer): void {
  const encoding = unicodeEncodingOf(body);
  if (encoding) throw validationError(`the body is ${encoding}; send JSON as UTF-8`, [{ field: 'body', reason: `${encoding}, not UTF-8` }]);
}

function unicodeEncodingOf(b: Buffer): string | null {
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xfe && b[2] === 0 && b[3] === 0) return 'UTF-32LE';
  if (b.length >= 4 && b[0] === 0 && b[1] === 0 && b[2] === 0xfe && b[3] === 0xff) return 'UTF-32BE';
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xfe) return 'UTF-16LE';
  if (b.length >= 2 && b[0] === 0xfe && b[1] === 0xff) return 'UTF-16BE';
  // Without a BOM: JSON starts with an ASCII character, so the zeros beside it tell the encoding.
  if (b.length >= 4 && b[0] !== 0 && b[1] === 0 && b[2] === 0 && b[3] === 0) return 'UTF-32LE';
  if (b.length >= 4 && b[0] === 0 && b[1] === 0 && b[2] === 0 && b[3] !== 0) return 'UTF-32BE';
  if (b.length >= 2 && b[0] !== 0 && b[1] === 0) return 'UTF-16LE';
  if (b.length >= 2 && b[0] === 0 && b[1] !== 0) return 'UTF-16BE';
  return null;
}

function firstNonSpace(buf: Buffer): number | undefined {
  for (const b of buf) if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return b;
  return undefined;
}

async function jsonPart(raw: Buffer, contentType: string): Promise<Buffer | null> {
  const form = await readForm(
    Readable.from([raw]),
    { 'content-type': contentType },
    {
      // The body is held already (within its own limit): a text field may be all of it.
      limits: { ...FORM_LIMITS, fieldBytes: raw.length },
      requireFile: false,
      receive: async (part) => {
        const chunks: Buffer[] = [];
        for await (const chunk of part.stream as AsyncIterable<Buffer>) chunks.push(chunk);
        return Buffer.concat(chunks);
      },
    },
  );
  if (form.file) return form.file;
  const text = form.fields.get('file') ?? (form.fields.size === 1 ? [...form.fields.values()][0]! : undefined);
  return text === undefined ? null : Buffer.from(text);
}
