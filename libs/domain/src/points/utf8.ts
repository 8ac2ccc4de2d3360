/**
 * Strict streaming UTF-8 decoding. Invalid bytes are an error, never a silent U+FFFD: a
 * Latin-1 file would otherwise upload metric names that differ from what the producer wrote.
 * On an error the text decoded so far, up to the first invalid byte, is still returned, so the
 * caller can tell on which line the problem is. A leading BOM is dropped.
 */

export type Decoded = { text: string; invalid: boolean };

const EMPTY = new Uint8Array(0);

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** The bytes of an incomplete multi-byte sequence at the end of valid UTF-8, or EMPTY. */
function incompleteTail(bytes: Uint8Array): Uint8Array {
  for (let k = 1; k <= 3 && k <= bytes.length; k++) {
    const b = bytes[bytes.length - k]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: look further back
    if (b < 0xc0) return EMPTY; // ASCII
    const needed = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    return needed > k ? bytes.slice(bytes.length - k) : EMPTY;
  }
  return EMPTY;
}

/** Offset of the first byte that cannot start or continue a valid sequence; length if none. */
export function firstInvalidUtf8Offset(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f; // no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f; // nothing above U+10FFFF
    } else return i;
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return n; // incomplete at the end: not (yet) invalid
      const c = bytes[i + k]!;
      if (k === 1 ? c < lo || c > hi : c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return n;
}

export class Utf8Decoder {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private tail: Uint8Array = EMPTY; // the bytes the decoder holds back, as computed by us
  private total = 0; // bytes received before the current chunk

  decode(chunk: Uint8Array): Decoded {
    const atStart = this.total - this.tail.length === 0; // do the held-back bytes start the stream?
    this.total += chunk.length;
    try {
      const text = this.decoder.decode(chunk, { stream: true });
      this.tail = incompleteTail(chunk.length >= 3 ? chunk : concat(this.tail, chunk));
      return { text, invalid: false };
    } catch {
      const bytes = concat(this.tail, chunk);
      const valid = bytes.subarray(0, firstInvalidUtf8Offset(bytes));
      return { text: new TextDecoder('utf-8', { ignoreBOM: !atStart }).decode(valid), invalid: true };
    }
  }

  /** Flushes; invalid when the input ended inside a multi-byte sequence. */
  end(): Decoded {
    try {
      return { text: this.decoder.decode(), invalid: false };
    } catch {
      return { text: '', invalid: true };
    }
  }
}
