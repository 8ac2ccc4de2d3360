import { describe, expect, it } from 'vitest';
import { flushesAtBatchEnd } from './each-batch.ts';

/** The buffer's state as the rule reads it: seals pending, full, and since when rows wait. */
const buffer = (hasSeals: boolean, isFull = false, since = 0) => ({ hasSeals, isFull, age: (now: number) => now - since });

describe('the projector writes its buffer at the end of a batch', () => {
  it("keeps a seal for the fetch's last batch, so the fetch's partitions go in one insert", () => {
    expect(flushesAtBatchEnd(buffer(true), false, 10)).toBe(false);
    expect(flushesAtBatchEnd(buffer(true), true, 10)).toBe(true);
  });

  it('writes a full buffer, or rows waiting a second, whatever batch of the fetch ends', () => {
    expect(flushesAtBatchEnd(buffer(false, true), false, 10)).toBe(true);
    expect(flushesAtBatchEnd(buffer(true, false, 0), false, 1000)).toBe(true);
    expect(flushesAtBatchEnd(buffer(false, false, 0), false, 999)).toBe(false);
  });

  it('leaves rows without a seal buffered at the end of a fetch (the upload goes on in the next)', () => {
    expect(flushesAtBatchEnd(buffer(false), true, 10)).toBe(false);
  });
});
