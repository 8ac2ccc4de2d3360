/**
 * CRC-64-AVRO, the Rabin fingerprint the Avro specification defines for schema
 * fingerprints in single-object encoding. Computed over a schema's Parsing Canonical Form.
 */
const EMPTY = 0xc15d213aa4d7a795n;
const MASK = 0xffffffffffffffffn;

const TABLE: readonly bigint[] = Array.from({ length: 256 }, (_, i) => {
  let fp = BigInt(i);
  for (let j = 0; j < 8; j++) fp = (fp >> 1n) ^ (EMPTY & (-(fp & 1n) & MASK));
  return fp;
});

/** The fingerprint as an unsigned 64-bit integer. */
export function crc64Avro(bytes: Uint8Array): bigint {
  let fp = EMPTY;
  for (const b of bytes) fp = (fp >> 8n) ^ TABLE[Number((fp ^ BigInt(b)) & 0xffn)]!;
  return fp;
}
