import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import { DomainError } from '@meridian/domain';
import type { BodyBudget } from '../http/body-budget.ts';

/**
 * Reads a whole request body up to `limit` bytes; beyond it, a 413 before reading further. A
 * body that declares its Content-Length (within the limit, so within the body budget already
 * reserved for it) is read into one buffer of that length as it arrives: its chunks are garbage
 * at once instead of all held until a concatenation copies them, which held the body twice at
 * its end. The buffer is its own memory, so a worker thread can be handed it without a copy.
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  return Number.isSafeInteger(declared) && declared > 0 ? readDeclared(req, declared) : readChunks(req, limit);
}

/** A body of the declared length (Node's parser delivers no more than that): fewer bytes, as when the client stops early, give what came. */
async function readDeclared(req: IncomingMessage, declared: number): Promise<Buffer> {
  const body = Buffer.allocUnsafeSlow(declared);
  let size = 0;
  for await (const chunk of req) {
    const bytes = chunk as Buffer;
    if (size + bytes.length > declared) {
      req.resume();
      throw tooLarge(declared);
    }
    bytes.copy(body, size);
    size += bytes.length;
  }
  return size === declared ? body : body.subarray(0, size);
}

async function readChunks(req: IncomingMessage, limit: number): Promise<Buffer> {
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

/** A whole body read once it has room under the instance's budget, which holds it until answered (no budget: at once). */
export async function readHeldBody(ctx: Context, limit: number, budget: BodyBudget | undefined, userName: string): Promise<Buffer> {
  await budget?.holdWhileResponding(ctx, limit, userName);
  return readBody(ctx.req, limit);
}

export function tooLarge(limit: number, what = 'the request body'): DomainError {
  return new DomainError('payload_too_large', `${what} is larger than the limit of ${limit} bytes`);
}
