import { describe, expect, it } from 'vitest';
import type { Context } from 'koa';
import { DomainError } from '@meridian/domain';
import { rateLimiter, TokenBuckets } from './rate-limit.ts';

function clock(start = 1_000) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('token buckets', () => {
  it('lets a burst through at once, then refuses with the time until the next token', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 2, burst: 3, now: c.now });
    expect([1, 2, 3].map(() => buckets.take('ada')).map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
    ]);
    const refused = buckets.take('ada');
    expect(refused).toMatchObject({ allowed: false, limit: 3, remaining: 0, retryAfterSeconds: 1 });
    expect(refused.resetSeconds).toBe(2); // 3 tokens at 2/s
  });

  it('refills at the configured rate, never above the burst', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 10, burst: 5, now: c.now });
    for (let i = 0; i < 5; i++) expect(buckets.take('k').allowed).toBe(true);
    expect(buckets.take('k').allowed).toBe(false);
    c.advance(99);
    expect(buckets.take('k').allowed).toBe(false); // 0.99 of a token
    c.advance(1);
    expect(buckets.take('k').allowed).toBe(true);
    c.advance(60_000);
    expect(buckets.take('k').remaining).toBe(4); // full (5) minus this one
  });

  it('sustains exactly the rate over time', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 50, burst: 100, now: c.now });
    let allowed = 0;
    for (let ms = 0; ms < 10_000; ms += 5) {
      if (buckets.take('k').allowed) allowed++; // 200 requests per second offered
      c.advance(5);
    }
    expect(allowed).toBeGreaterThanOrEqual(100 + 50 * 10 - 1);
    expect(allowed).toBeLessThanOrEqual(100 + 50 * 10 + 1);
  });

  it('keeps one bucket per key', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 1, burst: 1, now: c.now });
    expect(buckets.take('a').allowed).toBe(true);
    expect(buckets.take('a').allowed).toBe(false);
    expect(buckets.take('b').allowed).toBe(true);
  });

  it('forgets buckets that have refilled completely (idle keys cost no memory)', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 10, burst: 10, now: c.now });
    for (let i = 0; i < 1000; i++) buckets.take(`user-${i}`);
    expect(buckets.size).toBe(1000);
    c.advance(1_000); // one full refill period
    buckets.take('late');
    expect(buckets.size).toBe(1);
  });

  it('never holds more than maxKeys buckets, dropping the least recently used', () => {
    const c = clock();
    const buckets = new TokenBuckets({ ratePerSecond: 1, burst: 2, maxKeys: 3, now: c.now });
    for (const k of ['a', 'b', 'c']) buckets.take(k);
    buckets.take('a'); // a is now the most recent: b is the oldest
    buckets.take('d');
    expect(buckets.size).toBe(3);
    expect(buckets.take('a').remaining).toBe(0); // a kept its state: third request
    expect(buckets.take('b').remaining).toBe(1); // b was dropped: starts from full
  });

  it('refuses nonsense options', () => {
    expect(() => new TokenBuckets({ ratePerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => new TokenBuckets({ ratePerSecond: 1, burst: 0 })).toThrow(RangeError);
  });
});

describe('rate limit middleware', () => {
  const fakeCtx = () => {
    const headers: Record<string, string> = {};
    return {
      headers,
      ctx: {
        set: (k: string, v: string) => {
          headers[k] = v;
        },
      } as unknown as Context,
    };
  };

  it('puts the RateLimit headers on every answer and refuses with rate_limited and Retry-After', () => {
    const c = clock();
    const limit = rateLimiter({ ratePerSecond: 1, burst: 2, now: c.now });
    const first = fakeCtx();
    limit(first.ctx, 'ada');
    expect(first.headers).toEqual({ 'RateLimit-Limit': '2', 'RateLimit-Remaining': '1', 'RateLimit-Reset': '1', 'RateLimit-Policy': '2;w=2' });
    limit(fakeCtx().ctx, 'ada');
    const third = fakeCtx();
    let error: unknown;
    try {
      limit(third.ctx, 'ada');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('rate_limited');
    expect(third.headers).toMatchObject({ 'RateLimit-Remaining': '0', 'Retry-After': '1' });
  });
});
