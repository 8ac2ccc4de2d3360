import { DomainError } from '@meridian/domain';
import type { Context } from 'koa';

/**
 * How many requests of one kind (uploads receiving their bodies, downloads streaming) each
 * user has in progress on this api instance, against a cap. A slot is taken before the work
 * starts and given back exactly once, however the work ends; users with nothing in progress
 * hold no entry, so memory follows the requests in flight, not the users seen.
 */
export class PerUserSlots {
  private readonly held = new Map<string, number>();
  private readonly limit: number;
  /** Names the cap in the 429 (the setting and what it counts). */
  private readonly what: { readonly setting: string; readonly noun: string };

  constructor(limit: number, what: { readonly setting: string; readonly noun: string }) {
    this.limit = limit;
    this.what = what;
  }

  inUse(userName: string): number {
    return this.held.get(userName) ?? 0;
  }

  /** Takes a slot or throws 429 /problems/too-many; returns the release, which only the first call performs. */
  acquire(userName: string): () => void {
    const now = this.inUse(userName);
    if (now >= this.limit) {
      throw new DomainError('too_many', `at most ${this.limit} ${this.what.noun} at once per user (${this.what.setting}); retry when one has finished`, [
        { field: this.what.setting, reason: `${now} of ${this.limit} in use` },
      ]);
    }
    this.held.set(userName, now + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.inUse(userName) - 1;
      if (left > 0) this.held.set(userName, left);
      else this.held.delete(userName);
    };
  }
}

/**
 * Holds one of the user's slots for as long as the response is open: a streamed body that
 * ends, fails or is cut by the client going away all end with the response's 'close', which
 * Node emits once for every response. HEAD requests stream nothing and take no slot.
 */
export function holdWhileResponding(ctx: Context, slots: PerUserSlots, userName: string): void {
  if (ctx.method === 'HEAD') return;
  onResponseClosed(ctx, slots.acquire(userName));
}

/** Runs `release` once the response has closed (at once if it already has): Node emits 'close' once for every response. */
export function onResponseClosed(ctx: Context, release: () => void): void {
  if (ctx.res.closed) release();
  else ctx.res.once('close', release);
}
