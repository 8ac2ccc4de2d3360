import { readFileSync } from 'node:fs';
import { uncompressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import { DomainError } from '@meridian/domain';
import type { DecodedPush } from './decoded.ts';
import { decodeInfluxLines } from './influx/decode.ts';
import { SeriesNameCache } from './name-cache.ts';
import { decodeOtlpMetrics } from './otlp/decode.ts';
import { decodeRemoteWrite, decodeRemoteWriteBody, decodeRemoteWriteV2 } from './remote-write/decode.ts';

/**
 * Every decoder, fed the real senders' recordings cut, flipped, spliced and repeated, either
 * decodes or refuses with a DomainError (a 400 or 413 for the route): never another exception,
 * never a value that is not finite, never a loop (vitest's timeout). A seeded generator makes
 * every run the same cases. This is how a JavaScript snappy's endless loop on a literal with a
 * negative 32-bit length was found.
 */
const fixtures = new URL('../../../test/fixtures/protocols/', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, fixtures));

function generator(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s % n;
  };
}

function mangle(bytes: Uint8Array, random: (n: number) => number): Uint8Array {
  const out = Uint8Array.from(bytes);
  switch (random(5)) {
    case 0: // flip a few bytes
      for (let k = 0; k <= random(4); k++) out[random(out.length)] = random(256);
      return out;
    case 1: // cut
      return out.subarray(0, random(out.length));
    case 2: {
      // splice in random bytes
      const at = random(out.length);
      const extra = Uint8Array.from({ length: 1 + random(16) }, () => random(256));
      return Uint8Array.from([...out.subarray(0, at), ...extra, ...out.subarray(at)]);
    }
    case 3: {
      // repeat a slice
      const from = random(out.length);
      const to = from + random(out.length - from);
      return Uint8Array.from([...out, ...out.subarray(from, to)]);
    }
    default: // a varint's continuation bit set where there was none
      out[random(out.length)]! |= 0x80;
      return out;
  }
}

const CASES = 20000;
const limits = { maxSeries: 500, maxSamples: 5000 };
const names = new SeriesNameCache(1000);

const decoders: Array<[string, Uint8Array, (b: Uint8Array) => DecodedPush]> = [
  ['remote write body (snappy)', read('prometheus/01.snappy'), (b) => decodeRemoteWriteBody(b, '1.0', limits)],
  [
    'remote write (protobuf), names cached across cases',
    uncompressSync(read('prometheus/04.snappy'), { asBuffer: true }) as Buffer,
    (b) => decodeRemoteWrite(b, { ...limits, names }),
  ],
  ['remote write (protobuf)', uncompressSync(read('prometheus/03.snappy'), { asBuffer: true }) as Buffer, (b) => decodeRemoteWrite(b, limits)],
  ['remote write 2.0 read from a 1.0 body', uncompressSync(read('prometheus/02.snappy'), { asBuffer: true }) as Buffer, (b) => decodeRemoteWriteV2(b, limits)],
  ['OTLP protobuf', read('otlp-proto/01.pb'), (b) => decodeOtlpMetrics(b, 'protobuf', limits)],
  ['OTLP JSON', read('otlp-json/01.json'), (b) => decodeOtlpMetrics(b, 'json', limits)],
  ['Influx line protocol', read('influx/01.txt'), (b) => decodeInfluxLines(b, { ...limits, receivedAtMs: 1_764_300_000_000 })],
];

// Hundreds of decodes a case: CPU-bound seconds on a loaded 2-core machine, not a timing assertion.
describe('mangled bodies', { timeout: 30_000 }, () => {
  it.each(decoders)('%s: decodes or refuses with a DomainError, every time', (_name, bytes, decode) => {
    const random = generator(bytes.length);
    const outcomes = { decoded: 0, refused: 0, bad: [] as number[] };
    for (let i = 0; i < CASES; i++) {
      const body = mangle(bytes, random);
      let push: DecodedPush;
      try {
        push = decode(body);
      } catch (error) {
        if (!(error instanceof DomainError)) throw new Error(`case ${i}: ${String(error)} for ${Buffer.from(body).toString('base64')}`);
        outcomes.refused++;
        continue;
      }
      outcomes.decoded++;
      for (const s of push.series) {
        if (!s.values.every(Number.isFinite) || s.timestamps.length !== s.values.length) outcomes.bad.push(i);
      }
    }
    expect(outcomes.bad).toEqual([]);
    expect(outcomes.decoded + outcomes.refused).toBe(CASES);
  });
});
