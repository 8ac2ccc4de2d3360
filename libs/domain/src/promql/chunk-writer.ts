/**
 * Text written straight into byte chunks of a fixed size, each handed over once full: a range
 * query's answer of a million points and more is written without a string, an array or a
 * joined text per point (those were most of the api's young-generation garbage for such an
 * answer, and its scavenges most of the writing's time).
 */
export class ChunkWriter {
  private readonly size: number;
  private chunk: Uint8Array;
  private pos = 0;
  private full: Uint8Array[] = [];
  private readonly encoder = new TextEncoder();

  /** size: the bytes of a chunk (a longer text gets a chunk of its own length). */
  constructor(size: number) {
    this.size = size;
    this.chunk = new Uint8Array(size);
  }

  /** Text whose characters are all ASCII (numbers, JSON punctuation): a byte each, no encoding. */
  ascii(text: string): void {
    const n = text.length;
    if (this.pos + n > this.chunk.length) this.next(n);
    const { chunk, pos } = this;
    for (let i = 0; i < n; i++) chunk[pos + i] = text.charCodeAt(i);
    this.pos = pos + n;
  }

  /** Any text, as UTF-8. */
  text(text: string): void {
    const bytes = this.encoder.encode(text);
    if (this.pos + bytes.length > this.chunk.length) this.next(bytes.length);
    this.chunk.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** One ASCII character by its code. */
  byte(code: number): void {
    if (this.pos === this.chunk.length) this.next(1);
    this.chunk[this.pos++] = code;
  }

  /** The chunks filled since the last call; with `end`, the one being written too. */
  take(end = false): Uint8Array[] {
    if (end && this.pos > 0) this.next(0);
    const out = this.full;
    this.full = [];
    return out;
  }

  /** Hands over what the current chunk holds and starts one with room for `need` bytes. */
  private next(need: number): void {
    if (this.pos > 0) this.full.push(this.chunk.subarray(0, this.pos));
    this.chunk = new Uint8Array(Math.max(this.size, need));
    this.pos = 0;
  }
}
