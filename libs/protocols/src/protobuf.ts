import protobuf from 'protobufjs/minimal.js';
import { malformed } from './decoded.ts';

/**
 * The protobuf wire helpers the decoders share, over protobufjs' Reader. The decoders walk the
 * wire themselves rather than decode whole messages with generated code: they count series and
 * samples as they meet them and skip what they refuse, so a huge repeated field or a forged
 * length costs at most the body's bytes (a whole-message decoder builds every object first).
 * The .proto files beside each decoder are the schema they follow, and the tests encode with them.
 */
export type Reader = protobuf.Reader;

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_BYTES = 2;
export const WIRE_FIXED32 = 5;

export function readerOf(bytes: Uint8Array): Reader {
  return protobuf.Reader.create(bytes);
}

/** Reads a length-delimited field's length and answers where it ends; a length past the body is forged. */
export function fieldEnd(r: Reader, limit: number): number {
  const length = r.uint32();
  const end = r.pos + length;
  if (end > limit) throw malformed(`a protobuf field at byte ${r.pos} claims ${length} bytes, past the end of its message`);
  return end;
}

/** A message read to `end` must end there: a field that ran past it belongs to no message. */
export function expectEnd(r: Reader, end: number): void {
  if (r.pos !== end) throw malformed(`a protobuf message ending at byte ${end} was overrun to byte ${r.pos}`);
}

/** Skips a field of a wire type the decoder does not read (unknown fields, exemplars, metadata). */
export function skipField(r: Reader, wireType: number): void {
  r.skipType(wireType);
}

type LongLike = { toNumber(): number; low: number; high: number };

/**
 * An int64 varint as a number (exact below 2^53, which millisecond timestamps are). One of up to
 * seven bytes (below 2^49: any millisecond timestamp of this era) is read here without the Long
 * protobufjs makes of every int64; a longer one (a negative, or a larger number) goes through it.
 */
export function readInt64(r: Reader): number {
  const b = r.buf;
  const end = Math.min(r.pos + 7, r.len);
  let value = 0;
  let scale = 1;
  for (let p = r.pos; p < end; p++, scale *= 128) {
    const byte = b[p]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      r.pos = p + 1;
      return value;
    }
  }
  const v = r.int64() as unknown as LongLike | number;
  return typeof v === 'number' ? v : v.toNumber();
}

/** An sfixed64 as a number. */
export function readSfixed64(r: Reader): number {
  const v = r.sfixed64() as unknown as LongLike | number;
  return typeof v === 'number' ? v : v.toNumber();
}

/**
 * A fixed64 count of nanoseconds since the epoch as whole milliseconds (rounded down), exact:
 * nanoseconds of today pass 2^53, so the division is done on the two 32-bit halves.
 */
export function readNanosAsMillis(r: Reader): number {
  const v = r.fixed64() as unknown as LongLike | number;
  if (typeof v === 'number') return Math.floor(v / 1e6);
  return nanosToMillis(v.high >>> 0, v.low >>> 0);
}

/** floor((high * 2^32 + low) / 1e6) without losing the low digits. */
export function nanosToMillis(high: number, low: number): number {
  // 2^32 = 4294 * 1e6 + 967296
  const highRest = high * 967_296 + low; // < 2^53 for any high below 2^32
  return high * 4294 + Math.floor(highRest / 1e6);
}

/** Whether the double at the reader's position (not advanced) is Prometheus' stale marker, the NaN 0x7ff0000000000002. */
export function peekStaleNaN(r: Reader): boolean {
  if (r.pos + 8 > r.len) throw malformed('a protobuf double runs past the end of the body');
  const b = r.buf;
  const p = r.pos;
  return b[p] === 2 && b[p + 1] === 0 && b[p + 2] === 0 && b[p + 3] === 0 && b[p + 4] === 0 && b[p + 5] === 0 && b[p + 6] === 0xf0 && b[p + 7] === 0x7f;
}

/** Runs a decoder and turns protobufjs' own errors (index out of range, bad wire type) into a malformed body. */
export function decodingProtobuf<T>(what: string, decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof Error && error.name !== 'DomainError') throw malformed(`the body is not a valid ${what}: ${error.message}`);
    throw error;
  }
}

/**
 * Calls `read(end)` for each occurrence of the length-delimited field `field` of the message
 * that ends at `end`, with the reader at the occurrence's first byte, and skips every other
 * field; each occurrence must be read to its end.
 */
export function eachMessage(r: Reader, end: number, field: number, read: (messageEnd: number) => void): void {
  const wanted = (field << 3) | WIRE_BYTES;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag !== wanted) {
      skipField(r, tag & 7);
      continue;
    }
    const messageEnd = fieldEnd(r, end);
    read(messageEnd);
    r.pos = messageEnd;
  }
}
