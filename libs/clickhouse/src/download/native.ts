/**
 * The rows of a columnar download (format 'columns'), as ClickHouse writes them in its Native
 * format over HTTP: blocks of `metric_name String, ts Int64, value Float64, updated_at Int64`,
 * each block's columns one after the other. A block becomes one batch of typed columns in
 * Arrow's layouts: names dictionary-encoded (rows come sorted by name, so a block of 65,536
 * rows holds a few runs of one name each, and each run's name is kept once), the numbers
 * copied whole into typed arrays. Nothing is parsed per row but the names' lengths and bytes.
 */
export type PointColumns = {
  readonly rows: number;
  /** Row i's name is the dictionary's entry nameIndex[i]. */
  readonly nameIndex: Int32Array;
  /** Entry k of the dictionary is dictionaryBytes[dictionaryOffsets[k] .. dictionaryOffsets[k + 1]), UTF-8: the block's runs of names, in order. */
  readonly dictionaryOffsets: Int32Array;
  readonly dictionaryBytes: Uint8Array;
  /** Epoch milliseconds. */
  readonly timestamps: BigInt64Array;
  readonly values: Float64Array;
  /** Epoch milliseconds. */
  readonly updatedAt: BigInt64Array;
};

/** Row `row`'s name, as a string (for checks and tests: the encoders work on the bytes). */
export function nameOf(c: PointColumns, row: number): string {
  const k = c.nameIndex[row]!;
  return Buffer.from(
    c.dictionaryBytes.buffer,
    c.dictionaryBytes.byteOffset + c.dictionaryOffsets[k]!,
    c.dictionaryOffsets[k + 1]! - c.dictionaryOffsets[k]!,
  ).toString('utf8');
}

/** The columns a columnar download selects, in order, with their types. */
export const COLUMNAR_SELECT = [
  ['metric_name', 'String'],
  ['ts', 'Int64'],
  ['value', 'Float64'],
  ['updated_at', 'Int64'],
] as const;

/** At most what a column's name and type take in a block (`updated_at` and `Float64`, with their lengths). */
const HEADER_BYTES = 32;

/** What the headers of the three fixed-width columns take: each its name and type, with their one-byte lengths. */
const FIXED_HEADERS_BYTES = COLUMNAR_SELECT.slice(1).reduce((sum, [name, type]) => sum + 2 + name.length + type.length, 0);

/** The block is not whole yet: wait for more bytes. */
class Incomplete extends Error {}

/**
 * Decodes Native blocks from a byte stream (chunks cut anywhere) into batches, one per block
 * with rows. A block is held until it is whole (MERIDIAN_DOWNLOAD_BATCH_ROWS rows bounds it, as
 * ClickHouse's max_block_size); a stream that ends inside a block is an error.
 */
export async function* nativePointColumns(body: AsyncIterable<Buffer>): AsyncGenerator<PointColumns> {
  let pending: Buffer = Buffer.alloc(0);
  // Chunks not yet joined to `pending`: joined only when a read is worth trying, since a block
  // (megabytes) arrives in many chunks and joining at each would copy it over and over.
  let held: Buffer[] = [];
  let heldBytes = 0;
  // Bytes a partial block needs at least before it is worth reading again: a block is read
  // from its start each time, so reading it at every small chunk would cost its square.
  let needed = 0;
  for await (const chunk of body) {
    held.push(chunk);
    heldBytes += chunk.length;
    if (pending.length + heldBytes < needed) continue;
    pending = Buffer.concat(pending.length === 0 ? held : [pending, ...held]);
    held = [];
    heldBytes = 0;
    for (;;) {
      const read = readBlock(pending);
      if (read.kind === 'incomplete') {
        needed = Math.max(read.atLeast, Math.ceil(pending.length * 1.25));
        break;
      }
      needed = 0;
      pending = pending.subarray(read.end);
      if (read.columns.rows > 0) yield read.columns;
      if (pending.length === 0) break;
    }
  }
  if (heldBytes > 0) pending = Buffer.concat([pending, ...held]);
  if (pending.length > 0) {
    const read = readBlock(pending, true);
    if (read.kind === 'incomplete' || read.end !== pending.length) throw new Error('the columnar download ended inside a block');
    if (read.columns.rows > 0) yield read.columns;
  }
}

type BlockRead = { kind: 'block'; columns: PointColumns; end: number } | { kind: 'incomplete'; atLeast: number };

function readBlock(buf: Buffer, final = false): BlockRead {
  const r = new Reader(buf);
  try {
    const columnCount = r.varint();
    const rows = r.varint();
    if (columnCount !== COLUMNAR_SELECT.length) throw new Error(`a columnar download block has ${columnCount} columns, not ${COLUMNAR_SELECT.length}`);
    // The least a whole block can take: a length byte per name and 24 bytes of numbers a row.
    const atLeast = r.pos + rows * 25;
    if (buf.length < atLeast) return { kind: 'incomplete', atLeast };
    r.header(0);
    const nameStarts = r.pos;
    const nameIndex = new Int32Array(rows);
    // Where each run's name lies in buf, and its length: a row whose name equals the run's
    // joins it, compared byte by byte (names are short) with no string made.
    const runStarts: number[] = [];
    const runLengths: number[] = [];
    let runStart = -1;
    let runLength = -1;
    let i = 0;
    try {
      for (; i < rows; i++) {
        // Names under 128 bytes (nearly all) have a one-byte length: read here, not through varint().
        const first = buf[r.pos];
        let len: number;
        if (first !== undefined && first < 0x80) {
          len = first;
          r.pos++;
        } else {
          len = r.varint();
        }
        const start = r.pos;
        r.skip(len);
        if (len !== runLength || !sameBytes(buf, start, runStart, len)) {
          runStart = start;
          runLength = len;
          runStarts.push(start);
          runLengths.push(len);
        }
        nameIndex[i] = runStarts.length - 1;
      }
    } catch (error) {
      if (!(error instanceof Incomplete) || i === 0) throw error;
      // Names run alike in length: the block's end, estimated from those read, so the next read
      // waits for about the whole block rather than failing again a little further on.
      const namesBytes = Math.ceil(((r.pos - nameStarts) / i) * rows);
      return { kind: 'incomplete', atLeast: nameStarts + namesBytes + rows * 24 + 3 * HEADER_BYTES };
    }
    // The rest of the block is fixed-width: its end is known now, so a block cut there is not
    // read again (names and all) at every chunk that follows. (At the stream's end the headers
    // are read all the same, so a block of other columns is named as such.)
    const end = r.pos + FIXED_HEADERS_BYTES + rows * 24;
    if (buf.length < end && !final) return { kind: 'incomplete', atLeast: end };
    const { dictionaryOffsets, dictionaryBytes } = dictionary(buf, runStarts, runLengths);
    r.header(1);
    const timestamps = new BigInt64Array(r.copy(rows * 8));
    r.header(2);
    const values = new Float64Array(r.copy(rows * 8));
    r.header(3);
    const updatedAt = new BigInt64Array(r.copy(rows * 8));
    return { kind: 'block', columns: { rows, nameIndex, dictionaryOffsets, dictionaryBytes, timestamps, values, updatedAt }, end: r.pos };
  } catch (error) {
    // Cut within the fixed-width columns or a header: they are at most a few headers away.
    if (error instanceof Incomplete) return { kind: 'incomplete', atLeast: buf.length + 1 };
    throw error;
  }
}

/** Whether buf holds the same len bytes at a and at b. */
function sameBytes(buf: Buffer, a: number, b: number, len: number): boolean {
  for (let k = 0; k < len; k++) if (buf[a + k] !== buf[b + k]) return false;
  return true;
}

/** The runs' names copied into one contiguous run of bytes, with Arrow's offsets. */
function dictionary(buf: Buffer, starts: readonly number[], lengths: readonly number[]): { dictionaryOffsets: Int32Array; dictionaryBytes: Uint8Array } {
  const dictionaryOffsets = new Int32Array(starts.length + 1);
  let total = 0;
  for (let k = 0; k < starts.length; k++) dictionaryOffsets[k + 1] = total += lengths[k]!;
  const dictionaryBytes = new Uint8Array(total);
  for (let k = 0; k < starts.length; k++) dictionaryBytes.set(buf.subarray(starts[k], starts[k]! + lengths[k]!), dictionaryOffsets[k]);
  return { dictionaryOffsets, dictionaryBytes };
}

class Reader {
  pos = 0;
  private readonly buf: Buffer;

  constructor(buf: Buffer) {
    this.buf = buf;
  }

  varint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Incomplete();
      const b = this.buf[this.pos++]!;
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 128;
    }
  }

  skip(n: number): void {
    if (this.pos + n > this.buf.length) throw new Incomplete();
    this.pos += n;
  }

  string(): string {
    const len = this.varint();
    const start = this.pos;
    this.skip(len);
    return this.buf.toString('utf8', start, start + len);
  }

  /** The column's name and type, which must be the i-th of COLUMNAR_SELECT. */
  header(i: number): void {
    const name = this.string();
    const type = this.string();
    const [wantName, wantType] = COLUMNAR_SELECT[i]!;
    if (name !== wantName || type !== wantType) throw new Error(`a columnar download block has column ${name} ${type} where ${wantName} ${wantType} belongs`);
  }

  /** The next n bytes, copied into an ArrayBuffer of their own (typed arrays need alignment). */
  copy(n: number): ArrayBuffer {
    const start = this.pos;
    this.skip(n);
    const out = new ArrayBuffer(n);
    new Uint8Array(out).set(this.buf.subarray(start, start + n));
    return out;
  }
}
