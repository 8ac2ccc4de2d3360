import { segmentRows, type Segment } from '@meridian/projection';

/**
 * Shared by the live projector (apps/ingest) and rebuilds (libs/replay): one definition of
 * what a PointBatch becomes in ClickHouse, so a rebuild writes exactly the rows live ingestion does.
 *
 * Point batches → the rows of the `points` table, encoded as ONE block of ClickHouse's
 * Native format (column by column, little-endian, no text parsing on either side).
 *
 * Why Native and not TabSeparated: the sink's exactly-once rests on "an INSERT is all or
 * nothing", and over HTTP that only holds for Native. ClickHouse (18.16 measured) treats a
 * body cut short by a killed client as a normal end of data: a TSV insert cut at a row
 * boundary keeps the rows before the cut, and one cut inside the last column even keeps a
 * corrupted row (`1234` cut to `12`). A Native block declares its row count up front, so a
 * short body is rejected whole ("Cannot read all data") and nothing is written.
 * One block is written as one part, so a crash leaves the whole insert or none of it.
 */

/** The columns written, in order, with their ClickHouse types (see migrations/001_points.sql). */
export const POINT_COLUMNS = [
  ['metric_name', 'String'],
  ['ts', 'Int64'],
  ['value', 'Float64'],
  ['updated_at', 'Int64'],
  ['task_id', 'String'],
  ['kafka_partition', 'UInt16'],
  ['kafka_offset', 'UInt64'],
  ['row_in_batch', 'UInt32'],
] as const;

/** A column of the points schema. */
export type PointColumn = (typeof POINT_COLUMNS)[number][0];

const ALL_COLUMNS: readonly PointColumn[] = POINT_COLUMNS.map(([name]) => name);

/**
 * The columns of a block for a stage of one upload's share of one partition: its task and its
 * partition are the same on every row, so the stage's table holds them as column defaults and
 * the block leaves them out: 39 bytes of a row's 85–96 in the bench's uploads, that this process
 * no longer writes nor ClickHouse reads.
 */
export const STAGE_BLOCK_COLUMNS: readonly PointColumn[] = ALL_COLUMNS.filter((name) => name !== 'task_id' && name !== 'kafka_partition');

/** The INSERT of a Native block of these columns (all by default) into a table with the points schema (`points`, a rebuild's generation, a stage). */
export function insertPointsSql(table: string, columns: readonly PointColumn[] = ALL_COLUMNS): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error(`not a table name: ${table}`);
  return `INSERT INTO ${table} (${columns.join(', ')}) FORMAT Native`;
}

export const INSERT_POINTS_SQL = insertPointsSql('points');

/**
 * The name of the block these segments make in `table`, for the server's insert deduplication:
 * per partition, the first and last PointBatch offset (`points:0=120-180,2=95-95`). The
 * projector puts every batch in one insert and positions only move forward, so two blocks
 * that are not one retried block never cover the same range of the same table (after rows are
 * deleted the table forgets its tokens: generations.ts). Equal points at other offsets (a user's
 * upload sent twice) make another token and are stored.
 */
export function insertToken(table: string, segments: readonly Segment[]): string {
  const ranges = new Map<number, [number, number]>();
  for (const { partition, offset } of segments) {
    const range = ranges.get(partition);
    if (!range) ranges.set(partition, [offset, offset]);
    else ranges.set(partition, [Math.min(range[0], offset), Math.max(range[1], offset)]);
  }
  const parts = [...ranges].sort(([a], [b]) => a - b).map(([p, [first, last]]) => `${p}=${first}-${last}`);
  return `${table}:${parts.join(',')}`;
}

/** A row as it is stored: what the unit tests and the ClickHouse round trip compare. */
export type PointRow = {
  readonly metric_name: string;
  readonly ts: number;
  readonly value: number;
  readonly updated_at: number;
  readonly task_id: string;
  readonly kafka_partition: number;
  readonly kafka_offset: number;
  readonly row_in_batch: number;
};

const TWO_32 = 4294967296;

/** Bytes a row of each fixed-width column type takes in a Native block. */
const FIXED_WIDTH: Partial<Record<string, number>> = { Int64: 8, Float64: 8, UInt16: 2, UInt64: 8, UInt32: 4 };

/**
 * The buffer one writer's Native blocks are encoded into, one block after another. A block of
 * MERIDIAN_PROJECTOR_BATCH_ROWS rows is tens of MB outside V8's heap, and such memory counts
 * towards V8's trigger of a full collection: a 10M-point upload whose stage writer allocated a
 * block per insert ran 32 full collections against 8–11 with this buffer, and the upload job took
 * 25% more CPU. Only the owner's inserts use it, one at a time: a block is lent until its insert
 * has ended, and a block asked for meanwhile gets a buffer of its own. It keeps its largest block
 * (one insert's worth) for as long as its owner lives.
 */
export class BlockBuffer {
  private buffer: Buffer = Buffer.allocUnsafeSlow(0);
  private lent = false;

  /** `size` bytes for the next block: the reused buffer when it is free, else a buffer of its own. */
  lend(size: number): Buffer {
    if (this.lent) return Buffer.allocUnsafeSlow(size);
    if (this.buffer.length < size) {
      // The smaller buffer is freed now (detached: a transfer to a buffer of no bytes), not when V8
      // next collects its old generation: the projector held both, 42 and 75 MB, for the rest
      // of the push bench's remote write case. Nothing reads it: it is not lent.
      (this.buffer.buffer as ArrayBuffer).transfer(0);
      // Room for blocks a little larger than this one (metric names vary), so the next rarely regrows it.
      this.buffer = Buffer.allocUnsafeSlow(Math.ceil(size * 1.125));
    }
    this.lent = true;
    return this.buffer.subarray(0, size);
  }

  /**
   * The insert of a block from lend() has ended. `done`: the whole request was sent and answered,
   * so its bytes may be overwritten. Otherwise (a failure, an abort) a request may still be
   * reading them, and this buffer is never written again.
   */
  giveBack(block: Buffer, done: boolean): void {
    if (block.buffer !== this.buffer.buffer) return; // a buffer of its own
    if (!done) this.buffer = Buffer.allocUnsafeSlow(0);
    this.lent = false;
  }
}

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

/** A string as Native writes it: varint byte length, then the UTF-8 bytes. */
function nativeString(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8');
  const out = Buffer.allocUnsafe(varintLength(bytes.length) + bytes.length);
  bytes.copy(out, writeVarint(out, 0, bytes.length));
  return out;
}

/** Writes `unit` `times` times from `pos` with O(log times) copies; returns the end. */
function repeat(buf: Buffer, pos: number, unit: Buffer, times: number): number {
  if (times === 0) return pos;
  const end = pos + unit.length * times;
  unit.copy(buf, pos);
  let filled = unit.length;
  while (pos + filled < end) {
    const n = Math.min(filled, end - pos - filled);
    buf.copyWithin(pos + filled, pos, pos + n);
    filled += n;
  }
  return end;
}

function writeInt64(view: DataView, pos: number, x: number): void {
  const hi = Math.floor(x / TWO_32);
  view.setUint32(pos, x - hi * TWO_32, true);
  view.setInt32(pos + 4, hi, true);
}

/**
 * Encodes the segments as one Native block holding every point of every segment, in
 * segment order, with row_in_batch numbering each segment's points from 0: all the points
 * columns, or those given (in the points table's order). Into a buffer lent by `into` (give it
 * back when the insert ends), or a new one.
 */
export function encodePointsBlock(segments: readonly Segment[], into?: BlockBuffer, columns: readonly PointColumn[] = ALL_COLUMNS): Buffer {
  const written = POINT_COLUMNS.filter(([name]) => columns.includes(name));
  if (written.length !== columns.length || written.some(([name], i) => name !== columns[i]))
    throw new Error(`not points columns in their order: ${columns.join(', ')}`);
  const withNames = columns.includes('metric_name');
  // Per segment its names as Native writes them: one (every row's), or a batch's several.
  const names = withNames
    ? segments.map((s) => (s.batch.names !== undefined && s.batch.names.length > 0 ? s.batch.names : [s.batch.metric_name]).map(nativeString))
    : [];
  const tasks = columns.includes('task_id') ? segments.map((s) => nativeString(s.batch.task_id)) : [];
  let rows = 0;
  let stringBytes = 0;
  for (let i = 0; i < segments.length; i++) {
    const n = segmentRows(segments[i]!);
    rows += n;
    stringBytes += n * (tasks[i]?.length ?? 0);
    if (!withNames) continue;
    const own = names[i]!;
    if (own.length === 1) stringBytes += n * own[0]!.length;
    else for (const index of segments[i]!.batch.name_index!) stringBytes += own[index]!.length;
  }
  const headers = written.map(([name, type]) => Buffer.concat([nativeString(name), nativeString(type)]));
  const fixedBytes = rows * written.reduce((a, [, type]) => a + (FIXED_WIDTH[type] ?? 0), 0);
  const size = varintLength(written.length) + varintLength(rows) + headers.reduce((a, h) => a + h.length, 0) + stringBytes + fixedBytes;
  const buf = into === undefined ? Buffer.allocUnsafe(size) : into.lend(size);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let pos = writeVarint(buf, 0, written.length);
  pos = writeVarint(buf, pos, rows);
  /** A column whose value is the same on every row of a segment, 8 bytes wide. */
  const perSegment64 = (value: (s: Segment) => number) => {
    for (const s of segments) {
      const n = segmentRows(s);
      if (n === 0) continue;
      writeInt64(view, pos, value(s));
      pos = repeat(buf, pos + 8, buf.subarray(pos, pos + 8), n - 1);
    }
  };
  const writers: Record<PointColumn, () => void> = {
    metric_name: () => {
      for (let i = 0; i < segments.length; i++) {
        const own = names[i]!;
        if (own.length === 1) pos = repeat(buf, pos, own[0]!, segmentRows(segments[i]!));
        else for (const index of segments[i]!.batch.name_index!) pos += own[index]!.copy(buf, pos);
      }
    },
    ts: () => {
      for (const s of segments)
        for (const ts of s.batch.timestamps) {
          writeInt64(view, pos, ts);
          pos += 8;
        }
    },
    value: () => {
      for (const s of segments)
        for (const v of s.batch.values) {
          view.setFloat64(pos, v, true);
          pos += 8;
        }
    },
    updated_at: () => perSegment64((s) => s.batch.updated_at),
    task_id: () => {
      for (let i = 0; i < segments.length; i++) pos = repeat(buf, pos, tasks[i]!, segmentRows(segments[i]!));
    },
    kafka_partition: () => {
      for (const s of segments) {
        const n = segmentRows(s);
        for (let r = 0; r < n; r++) {
          view.setUint16(pos, s.partition, true);
          pos += 2;
        }
      }
    },
    kafka_offset: () => perSegment64((s) => s.offset),
    row_in_batch: () => {
      for (const s of segments) {
        const n = segmentRows(s);
        for (let r = 0; r < n; r++) {
          view.setUint32(pos, r, true);
          pos += 4;
        }
      }
    },
  };
  written.forEach(([name], index) => {
    pos += headers[index]!.copy(buf, pos);
    writers[name]();
  });
  if (pos !== size) throw new Error(`Native block size mismatch: wrote ${pos} of ${size} bytes`);
  return buf;
}
