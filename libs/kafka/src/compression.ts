import { promisify } from 'node:util';
import zlib from 'node:zlib';
import kafkajs from 'kafkajs';

// kafkajs is CommonJS and its CompressionCodecs is not importable by name from ESM.
const { CompressionCodecs, CompressionTypes } = kafkajs;

/**
 * How record batches are compressed on the wire and on the brokers' disks: the producer
 * compresses a batch once, the brokers store it as sent, and every consumer decompresses it.
 * zstd (Kafka 2.1+, produce and fetch requests of the versions kafkajs speaks) shrinks point
 * batches several times at little CPU; kafkajs ships gzip only, so zstd is registered here
 * from Node's own zlib (Node 22.15+), in every process that imports this library, reader or
 * writer: a consumer meets zstd batches whatever its own producers use.
 */
export type LogCompression = 'none' | 'gzip' | 'zstd';

export const LOG_COMPRESSIONS: readonly LogCompression[] = ['none', 'gzip', 'zstd'];

const zstdCompress = promisify(zlib.zstdCompress);
const zstdDecompress = promisify(zlib.zstdDecompress);

/** Level 3, zstd's default: batches of tens of KB gain little from higher levels and pay for them per produce. */
const ZSTD_LEVEL = 3;
const ZSTD_OPTIONS: zlib.ZstdOptions = { params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } };

/**
 * Record batches up to this size are compressed and decompressed on the calling thread. Node's
 * asynchronous zstd builds a stream and hands each call to libuv's pool and back: for a push's
 * batch of a few KB to tens of KB that costs three to four times the compression itself (a
 * 1,000-point PointBatch: 98 µs of CPU against 23 synchronously; 10,000 points: 294 against
 * 93). Past it the pool's thread does the work beside the event loop, as a large file's
 * batches want: 128 KiB at level 3 holds the loop a few hundred µs at most.
 */
export const ZSTD_SYNC_MAX_BYTES = 128 * 1024;

/**
 * A compressed batch up to this size is decompressed on the calling thread: it comes out several
 * times larger (point batches about 4×, any batch up to the broker's message.max.bytes), so its
 * bound is a quarter of the compression's, which keeps the work on the loop as short.
 */
const ZSTD_SYNC_DECOMPRESS_MAX_BYTES = ZSTD_SYNC_MAX_BYTES / 4;

/** zstd through Node's zlib: small batches on the calling thread, larger ones on libuv's pool. */
const zstdCodec = {
  compress: async (encoder: { buffer: Buffer }): Promise<Buffer> =>
    encoder.buffer.length <= ZSTD_SYNC_MAX_BYTES ? zlib.zstdCompressSync(encoder.buffer, ZSTD_OPTIONS) : await zstdCompress(encoder.buffer, ZSTD_OPTIONS),
  decompress: async (buffer: Buffer): Promise<Buffer> =>
    buffer.length <= ZSTD_SYNC_DECOMPRESS_MAX_BYTES ? zlib.zstdDecompressSync(buffer) : await zstdDecompress(buffer),
};

CompressionCodecs[CompressionTypes.ZSTD] = () => zstdCodec;

export function compressionType(compression: LogCompression): kafkajs.CompressionTypes {
  return compression === 'zstd' ? CompressionTypes.ZSTD : compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
}
