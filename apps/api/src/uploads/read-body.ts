import type { IncomingMessage } from 'node:http';
import { DomainError } from '@meridian/domain';

/** Reads a whole request body up to `limit` bytes; beyond it, a 413 before reading further. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      req.resume(); // drain the rest so the connection can answer
      throw tooLarge(limit);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size);
}

export function tooLarge(limit: number, what = 'the request body'): DomainError {
  return new DomainError('payload_too_large', `${what} is larger than the limit of ${limit} bytes`);
}
