/**
 * Rows of ClickHouse's RowBinary format made of one UInt32 and arrays of fixed-width numbers
 * (the PromQL samples: a series number, then its timestamps, values and, when asked, the
 * versions of its rows), read as the bytes arrive: a row is handed over once whole, so a
 * reader holds about one row. Every number is read as a JS number: 64-bit integers as their
 * two halves (exact below 2^53, which timestamps, versions and offsets are).
 *
 * The numbers go into arrays reused from row to row (grown to the longest row), not arrays of
 * each row's own: a series' arrays (80 KB for 10,000 samples) filled the api's 1 MB young
 * generation every few series, and the collector copied them (a 10M-sample query: about half a
 * CPU-second of the api's, most of its time).
 */
export type ArrayType = 'Int64' | 'UInt64' | 'UInt32' | 'UInt16' | 'Float64';

const WIDTH: Record<ArrayType, number> = { Int64: 8, UInt64: 8, UInt32: 4, UInt16: 2, Float64: 8 };

/**
 * One row: its UInt32, then each array as numbers: the first `length` of each (the arrays are
 * longer after a longer row). Valid until the callback that got it returns: the next row is read
 * into the same arrays, and a caller may use them meanwhile as scratch.
 */
export type BinaryRow = { readonly id: number; readonly arrays: readonly number[][]; readonly length: number };

/** The first `length` numbers of each of the row's arrays, the row's own: for a reader that keeps them. */
export function ownArrays(row: BinaryRow): number[][] {
  return row.arrays.map((a) => a.slice(0, row.length));
}

/** `into` with room for n numbers: grown by pushing (a holey or dictionary array from `new Array(n)` is slower to read). */
export function withRoom(into: number[], n: number): number[] {
  while (into.length < n) into.push(Number.NaN);
  return into;
}

/** The row is not whole yet: at least this many bytes (from the row's start) are needed. */
type Incomplete = { readonly atLeast: number };

/** The end of a LEB128 length at `pos` and its value, or null when it is cut. */
function varint(buf: Buffer, pos: number): { value: number; end: number } | null {
  let value = 0;
  let scale = 1;
  for (let p = pos; p < buf.length; p++) {
    const b = buf[p]!;
    value += (b & 0x7f) * scale;
    if (b < 0x80) return { value, end: p + 1 };
    scale *= 128;
  }
  return null;
}

function readArray(view: DataView, start: number, n: number, type: ArrayType, out: number[]): void {
  switch (type) {
    case 'Float64':
      for (let i = 0, p = start; i < n; i++, p += 8) out[i] = view.getFloat64(p, true);
      break;
    case 'Int64':
      for (let i = 0, p = start; i < n; i++, p += 8) out[i] = view.getInt32(p + 4, true) * 4294967296 + view.getUint32(p, true);
      break;
    case 'UInt64':
      for (let i = 0, p = start; i < n; i++, p += 8) out[i] = view.getUint32(p + 4, true) * 4294967296 + view.getUint32(p, true);
      break;
    case 'UInt32':
      for (let i = 0, p = start; i < n; i++, p += 4) out[i] = view.getUint32(p, true);
      break;
    case 'UInt16':
      for (let i = 0, p = start; i < n; i++, p += 2) out[i] = view.getUint16(p, true);
      break;
    default: {
      const never: never = type;
      return never;
    }
  }
}

/** The bytes of a LEB128 length of n. */
function varintBytes(n: number): number {
  let bytes = 1;
  for (let v = n; v >= 128; v = Math.floor(v / 128)) bytes++;
  return bytes;
}

/**
 * The row starting at `pos`, read into `arrays` (grown as needed), or what it needs when it is
 * cut: the whole row's bytes as soon as its first length is read (every array of a row is as
 * long), so a row spread over many chunks is joined once, not once per array.
 */
function readRow(buf: Buffer, pos: number, types: readonly ArrayType[], arrays: number[][]): { row: BinaryRow; end: number } | Incomplete {
  if (buf.length < pos + 4) return { atLeast: 4 };
  const first = varint(buf, pos + 4);
  if (first === null) return { atLeast: 4 + 10 };
  const length = first.value;
  const size = 4 + types.reduce((bytes, type) => bytes + varintBytes(length) + length * WIDTH[type], 0);
  if (buf.length < pos + size) return { atLeast: size };
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const id = view.getUint32(pos, true);
  let p = pos + 4;
  for (const [i, type] of types.entries()) {
    const len = varint(buf, p);
    if (len === null || len.value !== length || len.end + length * WIDTH[type] > pos + size) throw new Error('ClickHouse answered arrays of different lengths');
    readArray(view, len.end, length, type, withRoom(arrays[i]!, length));
    p = len.end + length * WIDTH[type];
  }
  return { row: { id, arrays, length }, end: p };
}

/**
 * Hands each whole row of the body to onRow. Chunks are joined only when the row they complete
 * is whole, into one buffer reused from row to row (grown to the longest): a buffer allocated
 * per row was 160 MB of them for a 10M-sample query, and the collections their memory set off.
 * A body that ends inside a row (an error ClickHouse wrote after the first rows, a cut
 * connection) is an error.
 */
export async function forEachBinaryRow(
  body: AsyncIterable<Buffer> | Iterable<Buffer>,
  types: readonly ArrayType[],
  onRow: (row: BinaryRow) => void,
): Promise<void> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  let needed = 0;
  let joined = Buffer.allocUnsafeSlow(0);
  const arrays = types.map(() => [] as number[]);
  // What is held as one buffer: the only chunk, or the chunks copied into `joined` (the first of them may be the rest of `joined` itself).
  const join = (): Buffer => {
    if (held.length === 1) return held[0]!;
    const into = joined.length >= heldBytes ? joined : Buffer.allocUnsafeSlow(Math.max(heldBytes, joined.length * 2));
    let at = 0;
    for (const piece of held) {
      if (piece.buffer === into.buffer) into.copyWithin(at, piece.byteOffset - into.byteOffset, piece.byteOffset - into.byteOffset + piece.length);
      else into.set(piece, at);
      at += piece.length;
    }
    joined = into;
    return into.subarray(0, heldBytes);
  };
  // Reads the whole rows of what is held; keeps the rest, and how much the row it starts needs at least.
  const drain = () => {
    const buf = join();
    let pos = 0;
    for (;;) {
      const read = readRow(buf, pos, types, arrays);
      if ('atLeast' in read) {
        needed = read.atLeast;
        break;
      }
      onRow(read.row);
      pos = read.end;
    }
    const rest = buf.subarray(pos);
    held = rest.length > 0 ? [rest] : [];
    heldBytes = rest.length;
  };
  for await (const chunk of body) {
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes >= needed) drain();
  }
  // `needed` may be more than a short last row takes (a length cut in its middle is assumed long).
  if (heldBytes > 0) drain();
  if (heldBytes > 0) throw new Error(`ClickHouse's answer ended inside a row (${heldBytes} bytes left over)`);
}
