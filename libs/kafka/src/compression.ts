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

CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: (encoder: { buffer: Buffer }) => zstdCompress(encoder.buffer, { params: { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL } }),
  decompress: (buffer: Buffer) => zstdDecompress(buffer),
});

export function compressionType(compression: LogCompression): kafkajs.CompressionTypes {
  return compression === 'zstd' ? CompressionTypes.ZSTD : compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
}
