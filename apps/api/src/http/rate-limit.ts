import type { Context } from 'koa';
import { DomainError } from '@meridian/domain';

/** Milliseconds on a monotonic clock; injected so the bucket logic is testable without waiting. */
export type Clock = () => number;

export type RateLimitOptions = {
  /** Tokens added per second (the sustained rate). */
  readonly ratePerSecond: number;
  /** Bucket size: how many requests may arrive at once. */
  readonly burst: number;
  /** Most buckets kept; past it the least recently used one is dropped. */
  readonly maxKeys?: number;
  readonly now?: Clock;
};

/** What one request learns from its bucket; the RateLimit-* and Retry-After headers come from it. */
export type RateDecision = {
  readonly allowed: boolean;
  /** The quota: the bucket size. */
  readonly limit: number;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** Seconds until the bucket is full again. */
  readonly resetSeconds: number;
  /** Seconds until the next request would be allowed (0 when this one was). */
  readonly retryAfterSeconds: number;
};

type Bucket = { tokens: number; at: number };

export const DEFAULT_MAX_RATE_LIMIT_KEYS = 10_000;

/**
 * Token buckets, one per key: each starts full (`burst` tokens), refills at `ratePerSecond`
 * and a request takes one token. Pure logic over an injected clock.
 *
 * Memory stays bounded: a bucket that has refilled completely is indistinguishable from a
 * new one, so idle buckets are swept away once per refill period; beyond `maxKeys` live
 * buckets the least recently used is dropped (its owner merely starts again from full).
 */
export class TokenBuckets {
  readonly #rate: number; // tokens per ms
  readonly #burst: number;
  readonly #maxKeys: number;
  readonly #now: Clock;
  readonly #fullRefillMs: number;
  readonly #buckets = new Map<string, Bucket>();
  #lastSweep: number;

  constructor(options: RateLimitOptions) {
    if (!(options.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be positive');
    if (!(options.burst >= 1)) throw new RangeError('burst must be at least 1');
    this.#rate = options.ratePerSecond / 1000;
    this.#burst = options.burst;
    this.#maxKeys = Math.max(1, options.maxKeys ?? DEFAULT_MAX_RATE_LIMIT_KEYS);
    this.#now = options.now ?? (() => performance.now());
    this.#fullRefillMs = this.#burst / this.#rate;
    this.#lastSweep = this.#now();
  }

  /** How many keys hold a bucket right now (for tests and metrics). */
  get size(): number {
    return this.#buckets.size;
  }

  take(key: string): RateDecision {
    const now = this.#now();
    this.#sweep(now);
    const bucket = this.#buckets.get(key);
    const tokens = bucket ? Math.min(this.#burst, bucket.tokens + Math.max(0, now - bucket.at) * this.#rate) : this.#burst;
    const allowed = tokens >= 1;
    const left = allowed ? tokens - 1 : tokens;
    // Re-insert so the map's order is least recently used first.
    if (bucket) this.#buckets.delete(key);
    this.#buckets.set(key, { tokens: left, at: now });
    if (this.#buckets.size > this.#maxKeys) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest !== undefined) this.#buckets.delete(oldest);
    }
    return {
      allowed,
      limit: this.#burst,
      remaining: Math.floor(left),
      resetSeconds: Math.ceil((this.#burst - left) / this.#rate / 1000),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - left) / this.#rate / 1000)),
    };
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < this.#fullRefillMs) return;
    this.#lastSweep = now;
    for (const [key, b] of this.#buckets) {
      if (b.tokens + (now - b.at) * this.#rate >= this.#burst) this.#buckets.delete(key);
    }
  }
}

/**
 * The per-user rate limit, run right after authentication on every non-public route
 * (see mountRoutes). Every authenticated answer carries RateLimit-Limit, RateLimit-Remaining,
 * RateLimit-Reset and RateLimit-Policy (IETF draft-ietf-httpapi-ratelimit-headers); over the
 * limit the answer is 429 /problems/rate-limited with Retry-After. All keys of one user share
 * one bucket, so issuing more keys does not raise the limit.
 */
export type RateLimiter = (ctx: Context, userName: string) => void;

export function rateLimiter(options: RateLimitOptions): RateLimiter {
  const buckets = new TokenBuckets(options);
  const policy = `${options.burst};w=${Math.max(1, Math.ceil(options.burst / options.ratePerSecond))}`;
  return (ctx, userName) => {
    const d = buckets.take(userName);
    ctx.set('RateLimit-Limit', String(d.limit));
    ctx.set('RateLimit-Remaining', String(d.remaining));
    ctx.set('RateLimit-Reset', String(d.resetSeconds));
    ctx.set('RateLimit-Policy', policy);
    if (!d.allowed) {
      ctx.set('Retry-After', String(d.retryAfterSeconds));
      throw new DomainError(
        'rate_limited',
        `more than ${options.ratePerSecond} requests per second (burst ${options.burst}) for this user; retry after ${d.retryAfterSeconds} s`,
      );
    }
  };
}

/** The headers every authenticated response carries, as documented in the OpenAPI document. */
export const rateLimitHeaderDocs = {
  'RateLimit-Limit': 'Requests the caller may send at once (the token bucket size).',
  'RateLimit-Remaining': 'Requests left in the bucket after this one.',
  'RateLimit-Reset': 'Seconds until the bucket is full again.',
  'RateLimit-Policy': 'The policy: "<burst>;w=<seconds to refill the bucket>".',
} as const;
