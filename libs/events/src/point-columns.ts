import { ByteReader, ByteWriter, CorruptBytesError, putInt } from './varint.ts';

/**
 * A point batch's points packed by series, for the log's compression (PointBatch v5's `columns`):
 *
 *   1 (the layout's version) · points · series · runs, then each run's series and length: which
 *   series each point is, in the batch's order (a push sends a series' points together: one run
 *   a series; absent with one series)
 *   timestamps, series by series: its first as a difference from the previous series' first,
 *   then its first interval, then each interval's difference from the one before (a scrape's
 *   jitter: one byte), all zigzag varints
 *   values, series by series: a byte k, then, for k ≤ 15, the series' values as integers times
 *   10^-k (the first, then differences, zigzag varints: a walk of two decimals or a counter in a
 *   byte or two a point) when every value of the series comes back exactly so; otherwise (k =
 *   255) its doubles' bits, each XOR the one before, as 8 planes of bytes, the high bytes first
 *   (a noisy gauge's sign and exponent repeat, which compression finds)
 *
 * Every value kind comes back bit for bit: NaN payloads (a stale marker), ±Inf, -0 and
 * subnormals make their series raw. Timestamps beyond ±2^50 ms (year 37,000) make the batch's
 * timestamps raw too (k byte 255 before them; 8 bytes each).
 */
export type PointColumns = {
  readonly timestamps: readonly number[];
  readonly values: readonly number[];
  /** Per point, its series; empty when there is one series. */
  readonly nameIndex: readonly number[];
};

const LAYOUT = 1;
const RAW = 255;
const MAX_DECIMALS = 15;
const POW10 = Array.from({ length: MAX_DECIMALS + 1 }, (_, k) => 10 ** k);
/** Mantissas and timestamps within ±2^50: their differences' zigzag stays below 2^53, exact in a double. */
const LIMIT = 2 ** 50;

/** Points grouped by series, each series' in batch order: `order[start[s]..start[s+1])` are series s's points. */
type Grouping = { readonly order: Int32Array; readonly start: Int32Array };

function groupBySeries(nameIndex: ArrayLike<number>, points: number, series: number): Grouping {
  const start = new Int32Array(series + 1);
  if (nameIndex.length === 0) {
    start[1] = points;
    const order = new Int32Array(points);
    for (let i = 0; i < points; i++) order[i] = i;
    return { order, start };
  }
  for (let i = 0; i < points; i++) start[nameIndex[i]! + 1]!++;
  for (let s = 0; s < series; s++) start[s + 1]! += start[s]!;
  const next = start.slice(0, series);
  const order = new Int32Array(points);
  for (let i = 0; i < points; i++) order[next[nameIndex[i]!]!++] = i;
  return { order, start };
}

function writeRuns(w: ByteWriter, nameIndex: readonly number[]): void {
  let runs = 0;
  for (let i = 0; i < nameIndex.length; i++) if (i === 0 || nameIndex[i] !== nameIndex[i - 1]) runs++;
  w.uint(runs);
  for (let i = 0; i < nameIndex.length;) {
    let j = i + 1;
    while (j < nameIndex.length && nameIndex[j] === nameIndex[i]) j++;
    w.uint(nameIndex[i]!);
    w.uint(j - i);
    i = j;
  }
}

function readRuns(r: ByteReader, points: number, series: number): number[] {
  const nameIndex: number[] = [];
  if (series === 1) return nameIndex;
  const runs = r.uint();
  if (runs > points) throw new CorruptBytesError('more runs than points');
  for (let i = 0; i < runs; i++) {
    const s = r.uint();
    const length = r.uint();
    if (s >= series || length > points - nameIndex.length) throw new CorruptBytesError('a run out of bounds');
    for (let k = 0; k < length; k++) nameIndex.push(s);
  }
  if (nameIndex.length !== points) throw new CorruptBytesError('runs do not cover the points');
  return nameIndex;
}

function withinLimit(ts: readonly number[]): boolean {
  for (let i = 0; i < ts.length; i++) if (!(Math.abs(ts[i]!) < LIMIT)) return false;
  return true;
}

function writeTimestamps(w: ByteWriter, ts: readonly number[], g: Grouping): void {
  if (!withinLimit(ts)) {
    w.byte(RAW);
    for (let i = 0; i < g.order.length; i++) {
      w.buf.writeBigInt64LE(BigInt(ts[g.order[i]!]!), w.pos);
      w.pos += 8;
    }
    return;
  }
  w.byte(0);
  const { buf } = w;
  const { order, start } = g;
  let pos = w.pos;
  let lastFirst = 0;
  for (let s = 0; s + 1 < start.length; s++) {
    const from = start[s]!;
    const to = start[s + 1]!;
    if (from === to) continue;
    let last = ts[order[from]!]!;
    pos = putInt(buf, pos, last - lastFirst);
    lastFirst = last;
    let interval = 0;
    for (let k = from + 1; k < to; k++) {
      const t = ts[order[k]!]!;
      pos = putInt(buf, pos, t - last - interval);
      interval = t - last;
      last = t;
    }
  }
  w.pos = pos;
}

function readTimestamps(r: ByteReader, out: number[], g: Grouping): void {
  if (r.byte() === RAW) {
    const raw = r.bytes(g.order.length * 8);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    for (let i = 0; i < g.order.length; i++) {
      const t = view.getBigInt64(i * 8, true);
      if (t > BigInt(Number.MAX_SAFE_INTEGER) || t < BigInt(Number.MIN_SAFE_INTEGER)) throw new CorruptBytesError('a timestamp past 2^53');
      out[g.order[i]!] = Number(t);
    }
    return;
  }
  let lastFirst = 0;
  for (let s = 0; s + 1 < g.start.length; s++) {
    const from = g.start[s]!;
    const to = g.start[s + 1]!;
    if (from === to) continue;
    let last = lastFirst + r.int();
    lastFirst = last;
    out[g.order[from]!] = last;
    let interval = 0;
    for (let k = from + 1; k < to; k++) {
      interval += r.int();
      last += interval;
      out[g.order[k]!] = last;
    }
    if (!Number.isSafeInteger(last)) throw new CorruptBytesError('a timestamp past 2^53');
  }
}

const scratch = { f64: new Float64Array(0), u32: new Uint32Array(0), u8: new Uint8Array(0) };
function rawScratch(n: number) {
  if (scratch.f64.length < n) {
    const f64 = new Float64Array(Math.max(n, scratch.f64.length * 2));
    Object.assign(scratch, { f64, u32: new Uint32Array(f64.buffer), u8: new Uint8Array(f64.buffer) });
  }
  return scratch;
}

function writeRawValues(w: ByteWriter, values: readonly number[], order: Int32Array, from: number, to: number): void {
  const n = to - from;
  const { f64, u32, u8 } = rawScratch(n);
  for (let i = 0; i < n; i++) f64[i] = values[order[from + i]!]!;
  for (let i = n - 1; i > 0; i--) {
    u32[2 * i]! ^= u32[2 * i - 2]!;
    u32[2 * i + 1]! ^= u32[2 * i - 1]!;
  }
  w.byte(RAW);
  // Little-endian doubles: byte 7 holds the sign and the exponent's high bits.
  for (let plane = 7; plane >= 0; plane--) for (let i = 0; i < n; i++) w.buf[w.pos++] = u8[i * 8 + plane]!;
}

function readRawValues(r: ByteReader, out: number[], order: Int32Array, from: number, to: number): void {
  const n = to - from;
  const planes = r.bytes(n * 8);
  const { f64, u32, u8 } = rawScratch(n);
  for (let plane = 7, p = 0; plane >= 0; plane--) for (let i = 0; i < n; i++) u8[i * 8 + plane] = planes[p++]!;
  for (let i = 1; i < n; i++) {
    u32[2 * i]! ^= u32[2 * i - 2]!;
    u32[2 * i + 1]! ^= u32[2 * i - 1]!;
  }
  for (let i = 0; i < n; i++) out[order[from + i]!] = f64[i]!;
}

function writeValues(w: ByteWriter, values: readonly number[], g: Grouping): void {
  for (let s = 0; s + 1 < g.start.length; s++) {
    const from = g.start[s]!;
    const to = g.start[s + 1]!;
    if (from === to) continue;
    if (writeDecimals(w, values, g.order, from, to)) continue;
    writeRawValues(w, values, g.order, from, to);
  }
}

/** Whether m / 10^k gives `v` back bit for bit (m = round(v × 10^k)); a -0 never comes back, its m being 0. */
const exact = (m: number, scale: number, v: number) => m / scale === v && Math.abs(m) <= LIMIT && !(m === 0 && 1 / v < 0);

/**
 * The series as decimal integers at the fewest decimals k ≤ 15 that give every value back; false
 * when none does (the caller then writes it raw). A value that needs more decimals than the ones
 * before starts the series again at its k: a value exact at k decimals is exact at more.
 */
function writeDecimals(w: ByteWriter, values: readonly number[], order: Int32Array, from: number, to: number): boolean {
  const { buf } = w;
  let k = 0;
  for (;;) {
    const scale = POW10[k]!;
    buf[w.pos] = k;
    let pos = w.pos + 1;
    let last = 0;
    let i = from;
    for (; i < to; i++) {
      const v = values[order[i]!]!;
      const m = Math.round(v * scale);
      if (!exact(m, scale, v)) break;
      pos = putInt(buf, pos, m - last);
      last = m;
    }
    if (i === to) {
      w.pos = pos;
      return true;
    }
    const v = values[order[i]!]!;
    do k++;
    while (k <= MAX_DECIMALS && !exact(Math.round(v * POW10[k]!), POW10[k]!, v));
    if (k > MAX_DECIMALS) return false;
  }
}

function readValues(r: ByteReader, out: number[], g: Grouping): void {
  for (let s = 0; s + 1 < g.start.length; s++) {
    const from = g.start[s]!;
    const to = g.start[s + 1]!;
    if (from === to) continue;
    const k = r.byte();
    if (k === RAW) {
      readRawValues(r, out, g.order, from, to);
      continue;
    }
    if (k > MAX_DECIMALS) throw new CorruptBytesError(`unknown value layout ${k}`);
    const scale = POW10[k]!;
    let m = 0;
    for (let i = from; i < to; i++) {
      m += r.int();
      out[g.order[i]!] = m / scale;
    }
  }
}

/** The batch's points as PointBatch v5's `columns`; `series`: how many names the batch has (1 when one metric). */
export function packPointColumns(c: PointColumns, series: number): Buffer {
  const points = c.timestamps.length;
  if (c.values.length !== points || (c.nameIndex.length !== 0 && c.nameIndex.length !== points)) throw new Error('columns of different lengths');
  if (series > 1 && c.nameIndex.length === 0) throw new Error('a batch of several series without a name index');
  for (const s of c.nameIndex) if (!(s >= 0 && s < series)) throw new Error(`name index ${s} out of ${series}`);
  // As the decoder refuses them: a fraction would come back changed, a timestamp past 2^53 not at all.
  for (const t of c.timestamps) if (!Number.isSafeInteger(t)) throw new Error(`a timestamp that is not a safe integer: ${t}`);
  const g = groupBySeries(c.nameIndex, points, series);
  // At most: the header and runs (8-byte varints), 8 bytes a timestamp, a byte a series and 8 bytes a value.
  const w = new ByteWriter(48 + 32 * points + series);
  w.byte(LAYOUT);
  w.uint(points);
  w.uint(series);
  if (series > 1) writeRuns(w, c.nameIndex);
  writeTimestamps(w, c.timestamps, g);
  writeValues(w, c.values, g);
  return w.done();
}

/** What packPointColumns wrote: `nameIndex` empty when the batch has one series. Throws CorruptBytesError. */
export function unpackPointColumns(bytes: Uint8Array, series: number): { timestamps: number[]; values: number[]; nameIndex: number[] } {
  const r = new ByteReader(bytes);
  if (r.byte() !== LAYOUT) throw new CorruptBytesError('unknown point columns layout');
  const points = r.uint();
  // Every point takes a byte at least (its timestamp), so a count past the bytes is corrupt, not a huge allocation.
  if (points > bytes.length) throw new CorruptBytesError('more points than bytes');
  if (r.uint() !== series) throw new CorruptBytesError(`columns of another number of series than ${series}`);
  const nameIndex = readRuns(r, points, series);
  const g = groupBySeries(nameIndex, points, series);
  const timestamps = new Array<number>(points);
  const values = new Array<number>(points);
  readTimestamps(r, timestamps, g);
  readValues(r, values, g);
  if (r.left !== 0) throw new CorruptBytesError('bytes after the columns');
  return { timestamps, values, nameIndex };
}
