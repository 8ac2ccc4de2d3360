/**
 * The rows of a columnar download (format 'columns'), as ClickHouse writes them in its Native
 * format over HTTP: blocks of `metric_name String, ts Int64, value Float64, updated_at Int64`,
 * each block's columns one after the other. A block becomes one batch of typed columns as they
 * lie on the wire: names as UTF-8 bytes with offsets (Arrow's layout), the numbers copied whole
 * into typed arrays. Nothing is parsed per row but the names' lengths.
 */
export type PointColumns = {
  readonly rows: number;
  /** Row i's name is nameBytes[nameOffsets[i] .. nameOffsets[i + 1]), UTF-8. */
  readonly nameOffsets: Int32Array;
  readonly nameBytes: Uint8Array;
  /** Epoch milliseconds. */
  readonly timestamps: BigInt64Array;
  readonly values: Float64Array;
  /** Epoch milliseconds. */
  readonly updatedAt: BigInt64Array;
};

/** The columns a columnar download selects, in order, with their types. */
export const COLUMNAR_SELECT = [
  ['metric_name', 'String'],
  ['ts', 'Int64'],
  ['value', 'Float64'],
  ['updated_at', 'Int64'],
] as const;

/** At most what a column's name and type take in a block (`updated_at` and `Float64`, with their lengths). */
const HEADER_BYTES = 32;

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
    const read = readBlock(pending);
    if (read.kind === 'incomplete' || read.end !== pending.length) throw new Error('the columnar download ended inside a block');
    if (read.columns.rows > 0) yield read.columns;
  }
}

type BlockRead = { kind: 'block'; columns: PointColumns; end: number } | { kind: 'incomplete'; atLeast: number };

function readBlock(buf: Buffer): BlockRead {
  const r = new Reader(buf);
  try {
    const columnCount = r.varint();
    const rows = r.varint();
    if (columnCount !== COLUMNAR_SELECT.length) throw new Error(`a columnar download block has ${columnCount} columns, not ${COLUMNAR_SELECT.length}`);
    // The least a whole block can take: a length byte per name and 24 bytes of numbers a row.
    const atLeast = r.pos + rows * 25;
    if (buf.length < atLeast) return { kind: 'incomplete', atLeast };
    r.header(0);
    const nameOffsets = new Int32Array(rows + 1);
    const nameStarts = r.pos;
    // Names are copied without their length prefixes into one contiguous run.
    const lengths = new Int32Array(rows);
    let total = 0;
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
        lengths[i] = len;
        r.skip(len);
        total += len;
        nameOffsets[i + 1] = total;
      }
    } catch (error) {
      if (!(error instanceof Incomplete) || i === 0) throw error;
      // Names run alike in length: the block's end, estimated from those read, so the next read
      // waits for about the whole block rather than failing again a little further on.
      const namesBytes = Math.ceil(((r.pos - nameStarts) / i) * rows);
      return { kind: 'incomplete', atLeast: nameStarts + namesBytes + rows * 24 + 3 * HEADER_BYTES };
    }
    const nameBytes = new Uint8Array(total);
    // Byte by byte: names are short, and a view per name (subarray) would cost more than its copy.
    let from = nameStarts;
    let to = 0;
    for (let row = 0; row < rows; row++) {
      const len = lengths[row]!;
      from += len < 0x80 ? 1 : varintSize(len);
      for (const end = from + len; from < end; from++) nameBytes[to++] = buf[from]!;
    }
    r.header(1);
    const timestamps = new BigInt64Array(r.copy(rows * 8));
    r.header(2);
    const values = new Float64Array(r.copy(rows * 8));
    r.header(3);
    const updatedAt = new BigInt64Array(r.copy(rows * 8));
    return { kind: 'block', columns: { rows, nameOffsets, nameBytes, timestamps, values, updatedAt }, end: r.pos };
  } catch (error) {
    // Cut within the fixed-width columns or a header: they are at most a few headers away.
    if (error instanceof Incomplete) return { kind: 'incomplete', atLeast: buf.length + 1 };
    throw error;
  }
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
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
