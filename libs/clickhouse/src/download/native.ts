/**
 * The rows of a columnar download (format 'columns'), as ClickHouse writes them in its Native
 * format over HTTP: blocks of `name_index Int32, ts Int64, value Float64, updated_at Int64`,
 * each block's columns one after the other. A row's name comes as its position in the page's
 * names (DownloadStream.names, sorted as ClickHouse sorts them), not as its string: ClickHouse
 * sorts and sends 4 bytes a row instead of the name, and the api reads no name per row. A
 * block becomes one batch of typed columns in Arrow's layouts, each column copied whole into
 * a typed array; the dictionary of names is the page's, the same object in every batch.
 */
export type PointColumns = {
  readonly rows: number;
  /** Row i's name is the dictionary's entry nameIndex[i]. */
  readonly nameIndex: Int32Array;
  /** Entry k of the dictionary is dictionaryBytes[dictionaryOffsets[k] .. dictionaryOffsets[k + 1]), UTF-8. */
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
  ['name_index', 'Int32'],
  ['ts', 'Int64'],
  ['value', 'Float64'],
  ['updated_at', 'Int64'],
] as const;

/** Bytes of one row: every column is fixed-width. */
const ROW_BYTES = 4 + 8 + 8 + 8;

/** What the headers of the columns take: each its name and type, with their one-byte lengths. */
const HEADERS_BYTES = COLUMNAR_SELECT.reduce((sum, [name, type]) => sum + 2 + name.length + type.length, 0);

/** The block is not whole yet: wait for more bytes. */
class Incomplete extends Error {}

/** The names as Arrow's dictionary layout: UTF-8 bytes end to end, and where each begins. */
export function nameDictionary(names: readonly string[]): { dictionaryOffsets: Int32Array; dictionaryBytes: Uint8Array } {
  const encoded = names.map((n) => Buffer.from(n, 'utf8'));
  const dictionaryOffsets = new Int32Array(names.length + 1);
  encoded.forEach((b, k) => (dictionaryOffsets[k + 1] = dictionaryOffsets[k]! + b.length));
  const dictionaryBytes = new Uint8Array(dictionaryOffsets[names.length]!);
  encoded.forEach((b, k) => dictionaryBytes.set(b, dictionaryOffsets[k]));
  return { dictionaryOffsets, dictionaryBytes };
}

/**
 * Decodes Native blocks from a byte stream (chunks cut anywhere) into batches, one per block
 * with rows; `names` are the page's, which the blocks' name_index counts in. A block is held
 * until it is whole (MERIDIAN_DOWNLOAD_BATCH_ROWS rows bounds it, as ClickHouse's
 * max_block_size); a stream that ends inside a block is an error.
 */
export async function* nativePointColumns(
  body: AsyncIterable<Buffer>,
  names: readonly string[],
  options: NativeReadOptions = {},
): AsyncGenerator<PointColumns> {
  const { consumed } = options;
  const dictionary = nameDictionary(names);
  let pending: Buffer = Buffer.alloc(0);
  // The joined buffer `pending` is a view of: handed to `consumed` once its rest is joined anew.
  let joined: Buffer | null = null;
  // Chunks not yet joined to `pending`: joined only once a whole block has arrived (a block
  // is a fixed size once its row count is read), so a block's bytes are copied once.
  let held: Buffer[] = [];
  let heldBytes = 0;
  let needed = 0;
  for await (const chunk of body) {
    held.push(chunk);
    heldBytes += chunk.length;
    if (pending.length + heldBytes < needed) continue;
    pending = Buffer.concat(pending.length === 0 ? held : [pending, ...held]);
    consumed?.(joined ? [joined, ...held] : held);
    joined = pending;
    held = [];
    heldBytes = 0;
    for (;;) {
      const read = readBlock(pending, dictionary, names.length);
      if (read.kind === 'incomplete') {
        needed = read.atLeast;
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
    const read = readBlock(pending, dictionary, names.length, true);
    if (read.kind === 'incomplete' || read.end !== pending.length) throw new Error('the columnar download ended inside a block');
    if (read.columns.rows > 0) yield read.columns;
  }
  consumed?.(joined ? [joined, ...held] : held);
}

export type NativeReadOptions = {
  /**
   * Called with the body's chunks and the decoder's own joined buffers once nothing decoded
   * reads them any more (every block's columns are copies): a caller that owns the body may
   * free their memory at once rather than when V8 next collects.
   */
  readonly consumed?: (buffers: readonly Buffer[]) => void;
};

type BlockRead = { kind: 'block'; columns: PointColumns; end: number } | { kind: 'incomplete'; atLeast: number };
type Dictionary = { readonly dictionaryOffsets: Int32Array; readonly dictionaryBytes: Uint8Array };

function readBlock(buf: Buffer, dictionary: Dictionary, entries: number, final = false): BlockRead {
  const r = new Reader(buf);
  try {
    const columnCount = r.varint();
    const rows = r.varint();
    if (columnCount !== COLUMNAR_SELECT.length) throw new Error(`a columnar download block has ${columnCount} columns, not ${COLUMNAR_SELECT.length}`);
    // Every column is fixed-width: the block's end is known from its row count. (At the
    // stream's end the headers are read all the same, so a block of other columns is named as such.)
    const end = r.pos + HEADERS_BYTES + rows * ROW_BYTES;
    if (buf.length < end && !final) return { kind: 'incomplete', atLeast: end };
    r.header(0);
    const nameIndex = new Int32Array(r.copy(rows * 4));
    for (let i = 0; i < rows; i++) {
      const k = nameIndex[i]!;
      if (k < 0 || k >= entries) throw new Error(`a columnar download row has name index ${k}, outside the page's ${entries} names`);
    }
    r.header(1);
    const timestamps = new BigInt64Array(r.copy(rows * 8));
    r.header(2);
    const values = new Float64Array(r.copy(rows * 8));
    r.header(3);
    const updatedAt = new BigInt64Array(r.copy(rows * 8));
    return { kind: 'block', columns: { rows, nameIndex, ...dictionary, timestamps, values, updatedAt }, end: r.pos };
  } catch (error) {
    // Cut within the header of the block: a few bytes more make it readable.
    if (error instanceof Incomplete) return { kind: 'incomplete', atLeast: buf.length + 1 };
    throw error;
  }
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
