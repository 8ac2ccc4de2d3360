import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import { DomainError } from '@meridian/domain';
import type { BodyBudget } from '../http/body-budget.ts';

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

/** A whole body read once it has room under the instance's budget, which holds it until answered (no budget: at once). */
export async function readHeldBody(ctx: Context, limit: number, budget: BodyBudget | undefined, userName: string): Promise<Buffer> {
  await budget?.holdWhileResponding(ctx, limit, userName);
  return readBody(ctx.req, limit);
}

export function tooLarge(limit: number, what = 'the request body'): DomainError {
  return new DomainError('payload_too_large', `${what} is larger than the limit of ${limit} bytes`);
}
