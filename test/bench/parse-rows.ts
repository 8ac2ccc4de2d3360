import { createEventCodec } from '@meridian/events';
import type { Readable } from 'node:stream';
import {
  decideUpload,
  parseUploadBatches,
  pointBatchOf,
  startUpload,
  type ColumnBatch,
  type PointsFact,
  type UploadFact,
  type UserRecord,
} from '@meridian/domain';
import { encodePointsBlock } from '@meridian/clickhouse';
import { csvPoints, downloadPoints, fmt } from './common.ts';

/**
 * The per-row cost of an upload on one core, without Kafka or ClickHouse:
 * the upload parser alone, then the upload job's per-row work (parse, batch per metric, Avro
 * encode each PointBatch) and the projector's Native encoding of those batches, for the
 * download layout (per-row names, two timestamps) and the 2-column layout. Against a trivial
 * baseline measured in the same run on the same bytes: UTF-8 decode and split into lines.
 * The input is in memory, cut into 64 KiB chunks as a stream delivers it.
 *   BENCH_PARSE_ROWS=2000000 node test/bench/parse-rows.ts   (also the first part of make bench-ingest)
 */
const ROWS = Number(process.env.BENCH_PARSE_ROWS ?? 2_000_000);
const METRICS = 1000;
const RUNS = Number(process.env.BENCH_PARSE_RUNS ?? 5);
const GOAL = 1_500_000;
const CHUNK = 64 * 1024;
const T0 = Date.UTC(2024, 0, 1);

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts = (await stream.toArray()) as Array<string | Buffer>;
  return Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));
}

async function* chunks(bytes: Buffer): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += CHUNK) yield bytes.subarray(at, at + CHUNK);
}

/** CPU seconds of this process so far (all its threads: the garbage collector's helpers count too). */
function cpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/**
 * Rows per CPU second of `run` (which returns the rows it saw), each of RUNS runs. CPU time,
 * not wall time: the machine is shared, and a wall clock would time the other processes too.
 */
async function rates(run: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t = cpuSeconds();
    const rows = await run();
    out.push(rows / (cpuSeconds() - t));
  }
  return out;
}

/** The floor of any parser: decode the bytes as UTF-8 and cut them into lines (one string each). */
async function splitLines(bytes: Buffer): Promise<number> {
  const decoder = new TextDecoder();
  let lines = 0;
  let carry = '';
  let last = '';
  for await (const chunk of chunks(bytes)) {
    const text = carry + decoder.decode(chunk, { stream: true });
    let pos = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', pos)) {
      last = text.slice(pos, nl);
      lines++;
      pos = nl + 1;
    }
    carry = text.slice(pos);
  }
  if (last === '\u0000') console.log(); // keeps the slices from being optimised away
  return lines;
}

async function parse(bytes: Buffer, metricName: string | undefined): Promise<number> {
  let points = 0;
  for await (const items of parseUploadBatches(chunks(bytes), metricName === undefined ? {} : { metricName })) {
    for (const item of items)
      if (item.kind === 'point') points++;
      else if (item.kind === 'error') throw new Error(`row ${item.row}: ${item.reason}`);
  }
  return points;
}

const pointsCodec = createEventCodec<PointsFact>();
const ADMIN: UserRecord = { user_name: 'bench', is_admin: true, created_at: 0, disabled_at: null, key_ids: [], entitlements: [], file_quota_bytes: null };

/** The upload job's per-row work (runUpload in apps/ingest/src/uploads/upload-commands.ts): parse, decide (write access, batch per metric), Avro-encode each batch. */
async function parseBatchEncode(bytes: Buffer, metricName: string | undefined, keep: ColumnBatch[] | null): Promise<number> {
  const run = startUpload({ on_error: 'fail', user: () => ADMIN, batch: { points: 10_000, bytes: 921_600 }, maxBufferedPoints: 1_000_000 });
  const write = (facts: readonly UploadFact[]) => {
    for (const fact of facts) {
      if (fact.type !== 'BatchReady') continue;
      const b = fact.batch;
      pointsCodec.encode(pointBatchOf('bench', T0, b));
      keep?.push(b);
    }
  };
  for await (const items of parseUploadBatches(chunks(bytes), metricName === undefined ? {} : { metricName }))
    write(decideUpload(run, { type: 'ItemsParsed', items }));
  write(decideUpload(run, { type: 'InputEnded' }));
  return run.points;
}

/** The projector's per-row work: Native blocks of up to 100k rows from the batches. */
function nativeEncode(batches: readonly ColumnBatch[]): number {
  let rows = 0;
  for (let i = 0; i < batches.length;) {
    const segments = [];
    let n = 0;
    for (; i < batches.length && n < 100_000; i++) {
      const b = batches[i]!;
      segments.push({ batch: pointBatchOf('bench', T0, b), partition: 0, offset: i });
      n += b.timestamps.length;
    }
    rows += n;
    encodePointsBlock(segments);
  }
  return rows;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))} (${fmt(median(xs))})`;

export async function benchParseRows(): Promise<void> {
  const layouts = [
    {
      name: 'download layout (metric_name,timestamp,metric_numeric_value,updated_at)',
      bytes: await bytesOf(downloadPoints(ROWS, METRICS, T0)),
      metricName: undefined,
    },
    { name: '2-column layout (timestamp,value)', bytes: await bytesOf(csvPoints(0, ROWS, T0)), metricName: 'bench.two' },
  ];
  console.log(
    `\nper-row cost on one core (${ROWS.toLocaleString('en')} rows in memory, ${RUNS} runs each: rows per CPU second, min–max (median); goal ≥ ${fmt(GOAL)})`,
  );
  for (const { name, bytes, metricName } of layouts) {
    await parse(bytes, metricName); // warm-up: the optimising compiler, the same for every case
    const baseline = await rates(() => splitLines(bytes));
    const parsed = await rates(() => parse(bytes, metricName));
    const job = await rates(() => parseBatchEncode(bytes, metricName, null));
    const batches: ColumnBatch[] = [];
    await parseBatchEncode(bytes, metricName, batches);
    const native = await rates(async () => nativeEncode(batches));
    const p = median(parsed);
    console.log(`  ${name}, ${(bytes.length / 1024 ** 2).toFixed(0)} MiB:`);
    console.log(
      `    parser alone:            ${range(parsed)} rows/s  ${p >= GOAL ? 'meets' : 'BELOW'} the goal (${(p / GOAL).toFixed(2)}×); ${(p / median(baseline)).toFixed(2)}× the split-lines baseline`,
    );
    console.log(`    parse + batch + Avro:    ${range(job)} rows/s  (the upload job's per-row work)`);
    console.log(`    Native block encoding:   ${range(native)} rows/s  (the projector's per-row work, alone)`);
    console.log(`    baseline, UTF-8 decode + split into lines: ${range(baseline)} lines/s`);
  }
}

if (import.meta.main) await benchParseRows();
