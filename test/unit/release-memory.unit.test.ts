import { describe, expect, it } from 'vitest';
import { releaseNow, releaseReadChunks } from '../../apps/api/src/http/release-memory.ts';

describe('releaseNow', () => {
  it('frees a large buffer of its own at once, without a collection', () => {
    const before = process.memoryUsage().arrayBuffers;
    const big = Buffer.allocUnsafeSlow(32 << 20).fill(1);
    expect(process.memoryUsage().arrayBuffers - before).toBeGreaterThanOrEqual(32 << 20);
    releaseNow([big]);
    expect(big.length).toBe(0);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1 << 20);
  });

  it("leaves a slice of another buffer's memory, and a buffer from Node's pool, as they are", () => {
    const whole = Buffer.allocUnsafeSlow(1 << 20).fill(2);
    const slice = whole.subarray(0, 1 << 19);
    const pooled = Buffer.from('a small body');
    releaseNow([slice, pooled]);
    expect(slice.length).toBe(1 << 19);
    expect(whole[0]).toBe(2);
    expect(pooled.toString()).toBe('a small body');
  });

  it('takes a buffer already released, or twice', () => {
    const big = Buffer.allocUnsafeSlow(1 << 20);
    releaseNow([big, big]);
    expect(() => releaseNow([big])).not.toThrow();
  });

  it("frees a read chunk smaller than Node's pool with a floor (releaseReadChunks), never the pool's memory seen whole", () => {
    const chunk = Buffer.allocUnsafeSlow(65_408).fill(3); // what Node's HTTP parser hands over a read
    const small = Buffer.allocUnsafeSlow(1024).fill(4);
    const pooled = Buffer.from('a small body');
    const pool = Buffer.from(pooled.buffer); // every pooled buffer's memory, seen whole
    releaseReadChunks([chunk, small, pool]);
    expect(chunk.length).toBe(0);
    expect(small[0]).toBe(4); // under the floor
    expect(pool.length).toBe(pooled.buffer.byteLength);
    expect(pooled.toString()).toBe('a small body');
    const kept = Buffer.allocUnsafeSlow(65_408).fill(5);
    releaseNow([kept]); // the default floor is above the pool: kept, no throw
    expect(kept.length).toBe(65_408);
    expect(kept[0]).toBe(5);
  });
});
