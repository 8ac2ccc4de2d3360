/**
 * Avro single-object encoding: 0xC3 0x01, the writer schema's CRC-64-AVRO fingerprint
 * as 8 little-endian bytes, then the Avro binary body. A reader always knows which
 * schema wrote a message without any registry service.
 */
export const MARKER = Uint8Array.of(0xc3, 0x01);
export const HEADER_LENGTH = 10;

export function writeHeader(fingerprint: bigint, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(HEADER_LENGTH + body.length);
  out[0] = MARKER[0]!;
  out[1] = MARKER[1]!;
  out.writeBigUInt64LE(fingerprint, 2);
  body.copy(out, HEADER_LENGTH);
  return out;
}

export type ParsedMessage = { readonly fingerprint: bigint; readonly body: Buffer };

/** Splits a message into fingerprint and body; null when it is not single-object encoded. */
export function parseHeader(message: Buffer): ParsedMessage | null {
  if (message.length < HEADER_LENGTH || message[0] !== MARKER[0] || message[1] !== MARKER[1]) return null;
  return { fingerprint: message.readBigUInt64LE(2), body: message.subarray(HEADER_LENGTH) };
}
