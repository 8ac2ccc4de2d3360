import { uncompressSync } from 'snappy';
import { malformed, tooLarge } from './decoded.ts';

/**
 * A snappy block never expands more than about 21 times (a 3-byte copy writes at most 64
 * bytes): a block that declares more is forged, and is refused before anything is allocated.
 */
const MAX_EXPANSION = 32;

/** The uncompressed length a snappy block declares in its preamble (a varint), or -1. */
export function snappyDeclaredLength(block: Uint8Array): number {
  let length = 0;
  for (let i = 0, shift = 0; i < block.length && i < 5; i++, shift += 7) {
    const b = block[i]!;
    length += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return length <= 0xffffffff ? length : -1;
  }
  return -1;
}

/**
 * Uncompresses a snappy block (the framing Prometheus remote write uses: one block, no stream
 * frames) of at most `maxBytes` uncompressed bytes. The declared length is checked before the
 * output is allocated, so a bomb costs nothing; the decoder (Rust's snap, through napi-rs'
 * snappy) checks every literal and copy against both buffers and the output's declared length,
 * so a forged stream is malformed, never a loop or a read out of bounds.
 */
export function snappyUncompressBounded(block: Uint8Array, maxBytes: number): Uint8Array {
  const declared = snappyDeclaredLength(block);
  if (declared < 0) throw malformed('the body is not a snappy block (bad length preamble)');
  if (declared > maxBytes) throw tooLarge(`the body declares ${declared} bytes uncompressed, more than ${maxBytes}`);
  if (declared > block.length * MAX_EXPANSION + 64)
    throw malformed(`the body declares ${declared} bytes uncompressed, more than a snappy block of ${block.length} bytes can hold`);
  try {
    return uncompressSync(block, { asBuffer: true }) as Buffer;
  } catch (error) {
    throw malformed(`the body is not a valid snappy block: ${(error as Error).message}`);
  }
}
