import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { PointBatcher, pointBatchOf, type PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { partitionFor } from '@meridian/kafka';
import type { Series } from './telemetry.ts';

/**
 * The points topic's bytes and the CPU of their encoding and decoding, in this process alone:
 * a fleet's windows batched as a push batches them (the metrics of one points partition in a
 * batch), each batch encoded as PointBatch v3 (timestamps as they are), v4 (as differences) and
 * v5 (packed by series: intervals' differences, values as decimal integers where exact),
 * and each encoded batch compressed as the producer compresses a record batch (none, gzip,
 * zstd level 3). Per layout: bytes a point as the brokers keep them, and CPU µs a point of
 * encode + compress and of decompress + decode (thread CPU, so other processes do not count).
 */
export type CodecFigures = { readonly layout: string; readonly bytesPerPoint: number; readonly encodeUs: number; readonly decodeUs: number };

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);
const zstd = promisify(zlib.zstdCompress);
const unzstd = promisify(zlib.zstdDecompress);
const ZSTD_LEVEL = { params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } };

type Compression = { readonly name: string; compress(b: Buffer): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> };
const COMPRESSIONS: readonly Compression[] = [
  { name: 'none', compress: async (b) => b, decompress: async (b) => b },
  { name: 'gzip', compress: (b) => gzip(b), decompress: (b) => gunzip(b) },
  { name: 'zstd', compress: (b) => zstd(b, ZSTD_LEVEL), decompress: (b) => unzstd(b) },
];

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** The batches the windows make, as the api's push path makes them. */
function batchesOf(windows: Iterable<Series[]>, batchPoints: number, partitions: number) {
  const batches = [];
  for (const window of windows) {
    const batcher = new PointBatcher({ points: batchPoints, bytes: 921_600 }, Number.MAX_SAFE_INTEGER, (name) => partitionFor(name, partitions));
    for (const s of window) for (let i = 0; i < s.timestamps.length; i++) batches.push(...batcher.add(s.name, s.timestamps[i]!, s.values[i]!));
    batches.push(...batcher.drain());
  }
  return batches.map((b) => pointBatchOf('bench-task', 1_704_067_200_000, b));
}

export async function pointBatchCodecFigures(windows: Iterable<Series[]>, options: { batchPoints: number; partitions: number }): Promise<CodecFigures[]> {
  const events = batchesOf(windows, options.batchPoints, options.partitions);
  const points = events.reduce((n, e) => n + e.timestamps.length, 0);
  const figures: CodecFigures[] = [];
  for (const [version, writeDeltas, writePacked] of [
    ['v3', false, false],
    ['v4', true, false],
    ['v5', true, true],
  ] as const) {
    const codec = createEventCodec<PointsFact>(undefined, { writeDeltas, writePacked });
    for (const c of COMPRESSIONS) {
      let start = cpuUs();
      const stored: Buffer[] = [];
      for (const e of events) stored.push(await c.compress(codec.encode(e)));
      const encodeUs = cpuUs() - start;
      start = cpuUs();
      let decoded = 0;
      for (const bytes of stored) decoded += (codec.decode(await c.decompress(bytes)) as { timestamps: number[] }).timestamps.length;
      const decodeUs = cpuUs() - start;
      if (decoded !== points) throw new Error(`${version} ${c.name}: decoded ${decoded} of ${points} points`);
      figures.push({
        layout: `PointBatch ${version}, ${c.name}`,
        bytesPerPoint: stored.reduce((n, b) => n + b.length, 0) / points,
        encodeUs: encodeUs / points,
        decodeUs: decodeUs / points,
      });
    }
  }
  return figures;
}
