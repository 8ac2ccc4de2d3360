/**
 * Unsigned LEB128 varints of JS numbers up to 2^53, and zigzag for signed ones up to ±2^52,
 * written by arithmetic above 2^31 (bit operators stop at 32 bits).
 */
/** Writes `v`, an integer in [0, 2^53], at `pos`; returns the position after it. */
export function putUint(buf: Uint8Array, pos: number, v: number): number {
  while (v > 0x7fffffff) {
    buf[pos++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  while (v > 0x7f) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[pos++] = v;
  return pos;
}

/** Writes `v`, an integer in [-2^52, 2^52), zigzag: 0, -1, 1, -2… as 0, 1, 2, 3… */
export const putInt = (buf: Uint8Array, pos: number, v: number): number => putUint(buf, pos, v >= 0 ? v * 2 : -v * 2 - 1);

/** The scratch writers write into; it keeps the largest size needed, up to this. */
const MAX_KEPT_SCRATCH = 4 * 1024 * 1024;
let scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * Writes into a scratch buffer of the capacity its caller says it needs at most: the varints do
 * not check for room one by one (a write past the end is lost, which done() refuses).
 */
export class ByteWriter {
  readonly buf: Buffer;
  pos = 0;

  constructor(capacity: number) {
    if (scratch.length < capacity) {
      const grown = Buffer.allocUnsafe(capacity);
      if (capacity <= MAX_KEPT_SCRATCH) scratch = grown;
      this.buf = grown;
    } else this.buf = scratch;
  }

  byte(b: number): void {
    this.buf[this.pos++] = b;
  }

  /** `v`: an integer in [0, 2^53]. */
  uint(v: number): void {
    this.pos = putUint(this.buf, this.pos, v);
  }

  /** `v`: an integer in [-2^52, 2^52). */
  int(v: number): void {
    this.pos = putInt(this.buf, this.pos, v);
  }

  /** A copy of what was written: the scratch is the next writer's. */
  done(): Buffer {
    if (this.pos > this.buf.length) throw new Error(`wrote ${this.pos} bytes into a writer of ${this.buf.length}`);
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}

/** Thrown on bytes a writer could not have written. */
export class CorruptBytesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CorruptBytesError';
  }
}

export class ByteReader {
  pos = 0;
  readonly buf: Uint8Array;
  constructor(buf: Uint8Array) {
    this.buf = buf;
  }

  get left(): number {
    return this.buf.length - this.pos;
  }

  byte(): number {
    if (this.pos >= this.buf.length) throw new CorruptBytesError('ends early');
    return this.buf[this.pos++]!;
  }

  uint(): number {
    const buf = this.buf;
    let pos = this.pos;
    let value = 0;
    let scale = 1;
    // 8 bytes hold 56 bits: enough for 2^53, and a bound on a corrupt run of continuation bits.
    for (let i = 0; i < 8; i++) {
      if (pos >= buf.length) throw new CorruptBytesError('ends early');
      const b = buf[pos++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        this.pos = pos;
        return value;
      }
      scale *= 128;
    }
    throw new CorruptBytesError('varint too long');
  }

  int(): number {
    const z = this.uint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  bytes(n: number): Uint8Array {
    if (n > this.left) throw new CorruptBytesError('ends early');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}
