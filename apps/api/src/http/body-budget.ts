import type { Context } from 'koa';
import { DomainError } from '@meridian/domain';
import { onResponseClosed } from './per-user-slots.ts';

type Waiter = { readonly bytes: number; readonly grant: () => void };

/**
 * The bytes of request bodies one api instance holds whole in memory at once, across every user
 * (the per-user slots bound one user, not how many users push at the same moment). A request
 * reserves its declared Content-Length (without one, its route's limit) before a byte of its body
 * is read, and gives it back when its response closes: its decoded points and encoded batches
 * live until then, a few times the body's bytes. Past the budget it waits its turn, first come
 * first served, unread (the socket's own flow control holds the sender), at most `waitMs`; then
 * 503 with Retry-After, which every pushing agent retries. One user holds at most half of it
 * beside their first body (past it: 429 at once, not a wait at the head of everyone's queue), so
 * a user sending slowly cannot hold the whole instance's room.
 */
export class BodyBudget {
  readonly #total: number;
  readonly #waitMs: number;
  #free: number;
  readonly #queue: Waiter[] = [];
  readonly #byUser = new Map<string, number>();

  constructor(totalBytes: number, waitMs: number) {
    this.#total = totalBytes;
    this.#free = totalBytes;
    this.#waitMs = waitMs;
  }

  /** Bytes reserved by requests now (for the metrics and the tests). */
  get held(): number {
    return this.#total - this.#free;
  }

  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Reserves the request's body until its response closes; rejects with 503 past the wait, or
   * when the client goes away while waiting, and with 429 past the user's share. A body declared
   * larger than its route's limit takes nothing and waits for nothing: its route answers 413 at once.
   */
  async holdWhileResponding(ctx: Context, limit: number, userName: string): Promise<void> {
    const header = ctx.get('Content-Length');
    const declared = header === '' ? limit : Number(header);
    if (!Number.isFinite(declared) || declared > limit) return;
    const bytes = Math.min(declared, this.#total);
    const mine = this.#byUser.get(userName) ?? 0;
    if (mine > 0 && mine + bytes > this.#total / 2) {
      throw new DomainError(
        'too_many',
        `one user's bodies may hold at most half of this api instance's MERIDIAN_BODY_BYTES_IN_FLIGHT (${this.#total} bytes) beside their first; retry when one has been answered`,
        [{ field: 'MERIDIAN_BODY_BYTES_IN_FLIGHT', reason: `${mine} bytes held by this user` }],
      );
    }
    this.#byUser.set(userName, mine + bytes);
    try {
      await this.#reserve(bytes, ctx);
    } catch (refusal) {
      this.#forget(userName, bytes);
      throw refusal;
    }
    onResponseClosed(ctx, () => {
      this.#free += bytes;
      this.#forget(userName, bytes);
      this.#grant();
    });
  }

  #forget(userName: string, bytes: number): void {
    const left = (this.#byUser.get(userName) ?? 0) - bytes;
    if (left > 0) this.#byUser.set(userName, left);
    else this.#byUser.delete(userName);
  }

  #reserve(bytes: number, ctx: Context): Promise<void> {
    if (this.#queue.length === 0 && bytes <= this.#free) {
      this.#free -= bytes;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const leave = (error: DomainError) => {
        clearTimeout(timer);
        ctx.res.off('close', gone);
        const at = this.#queue.indexOf(waiter);
        if (at >= 0) this.#queue.splice(at, 1);
        // The head leaving may let the next one in.
        this.#grant();
        reject(error);
      };
      const waiter: Waiter = {
        bytes,
        grant: () => {
          clearTimeout(timer);
          ctx.res.off('close', gone);
          resolve();
        },
      };
      const timer = setTimeout(
        () =>
          leave(
            new DomainError(
              'unavailable',
              `this api instance holds its budget of request bodies (MERIDIAN_BODY_BYTES_IN_FLIGHT, ${this.#total} bytes); retry shortly`,
              [{ field: 'MERIDIAN_BODY_BYTES_IN_FLIGHT', reason: `waited ${this.#waitMs} ms for ${bytes} bytes` }],
            ),
          ),
        this.#waitMs,
      );
      const gone = () => leave(new DomainError('unavailable', 'the client went away while its body waited for room'));
      ctx.res.once('close', gone);
      this.#queue.push(waiter);
      this.#grant();
    });
  }

  /** Lets in waiters from the head while they fit: one too large for now holds those behind it, so none starves. */
  #grant(): void {
    while (this.#queue.length > 0 && this.#queue[0]!.bytes <= this.#free) {
      const next = this.#queue.shift()!;
      this.#free -= next.bytes;
      next.grant();
    }
  }
}
