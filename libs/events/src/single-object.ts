/**
 * Avro single-object encoding: 0xC3 0x01, the writer schema's CRC-64-AVRO fingerprint
 * as 8 little-endian bytes, then the Avro binary body. A reader always knows which
 * schema wrote a message without any registry service.
 */
export const MARKER = Uint8Array.of(0xc3, 0x01);
export const HEADER_LENGTH = 10;

export function writeHeader(fingerprint: bigint, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(HEADER_LENGTH + body.length);
  putHeader(out, fingerprint);
  body.copy(out, HEADER_LENGTH);
  return out;
}

function putHeader(out: Buffer, fingerprint: bigint): void {
  out[0] = MARKER[0]!;
  out[1] = MARKER[1]!;
  out.writeBigUInt64LE(fingerprint, 2);
}

/** What `encodeSingleObject` needs of an Avro type: avsc's Type.encode. */
type BodyWriter = { encode(value: unknown, buf: Buffer, pos: number): number };

/** The scratch a message is written into; it keeps the largest size needed, up to this. */
const MAX_KEPT_SCRATCH = 4 * 1024 * 1024;
let scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * A message (header, then `value`'s body) written once into a reused scratch buffer, then
 * copied out. avsc's toBuffer writes a body of over 1 KiB twice (once into its 1 KiB buffer to
 * learn the size, then again into a zero-filled one) and writeHeader copies it a third time: a
 * point batch of 10k points is ~140 KB, and the upload job writes millions of points a second.
 */
export function encodeSingleObject(fingerprint: bigint, type: BodyWriter, value: unknown): Buffer {
  let buf = scratch;
  let end = type.encode(value, buf, HEADER_LENGTH);
  if (end < 0) {
    // avsc answers how many bytes were missing: the second write fits exactly.
    buf = Buffer.allocUnsafe(buf.length - end);
    end = type.encode(value, buf, HEADER_LENGTH);
    if (buf.length <= MAX_KEPT_SCRATCH) scratch = buf;
  }
  putHeader(buf, fingerprint);
  const out = Buffer.allocUnsafe(end);
  buf.copy(out, 0, 0, end);
  return out;
}

export type ParsedMessage = { readonly fingerprint: bigint; readonly body: Buffer };

/** Splits a message into fingerprint and body; null when it is not single-object encoded. */
export function parseHeader(message: Buffer): ParsedMessage | null {
  if (message.length < HEADER_LENGTH || message[0] !== MARKER[0] || message[1] !== MARKER[1]) return null;
  return { fingerprint: message.readBigUInt64LE(2), body: message.subarray(HEADER_LENGTH) };
}
