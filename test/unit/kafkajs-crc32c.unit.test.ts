import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The record batch checksum patched by patches/kafkajs+2.2.4.patch: @node-rs/crc32's native
// CRC-32C where it loads, kafkajs' JavaScript one otherwise. Both must give the broker the same
// checksum for every batch.
const require = createRequire(import.meta.url);
const patched = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (buffer: Buffer) => number;
const javascript = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (buffer: Buffer) => number;

describe('kafkajs record batch checksum (patched)', () => {
  it('is CRC-32C: the standard check value, and the JavaScript one on random batches of every size', () => {
    expect(patched(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(patched(Buffer.alloc(0))).toBe(0);
    for (const size of [1, 7, 8, 9, 63, 64, 65, 1000, 4096, 65_537, 1_000_003]) {
      const batch = randomBytes(size);
      expect(patched(batch)).toBe(javascript(batch));
      // A view into a larger buffer (kafkajs checksums a slice of its encoder's buffer).
      const inside = Buffer.concat([randomBytes(3), batch, randomBytes(5)]).subarray(3, 3 + size);
      expect(patched(inside)).toBe(javascript(batch));
    }
  });

  it('runs in native code on this platform (its prebuilt binary loads)', () => {
    // On a platform without one the patch falls back to JavaScript; ours, and CI's, have one.
    const { crc32c } = require('@node-rs/crc32') as { crc32c(buffer: Buffer): number };
    expect(crc32c(Buffer.from('123456789')) >>> 0).toBe(0xe3069283);
    // The patch chose it: its export calls the native function, not kafkajs' table loop.
    expect(String(patched)).toContain('native(buffer)');
  });
});
