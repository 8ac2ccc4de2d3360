import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { MetricsUploadRequested } from '@meridian/domain';
import type { BlobStore } from '../blob-store.ts';
import { UploadLimitExceeded } from './limits.ts';

/**
 * The upload's bytes, from the staged object (claim check). Commands written before JSON bodies
 * were staged carry small bodies inline, and a replay of the log still reads them from there.
 */
export async function openUploadBytes(cmd: MetricsUploadRequested, storage: BlobStore): Promise<Readable> {
  if (cmd.payload !== null) return Readable.from([cmd.payload]);
  if (cmd.staged_object === null) throw new Error('the upload command carries neither a payload nor a staged object');
  return storage.open(cmd.staged_object);
}

const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;

/**
 * The ratio is applied only past this much output: a small input has too few bytes for its
 * ratio to mean anything (a few hundred bytes of repeated rows, or gzip's own header, can
 * exceed any sensible ratio), while 16 MiB of output costs the worker nothing, and a bomb is
 * still stopped there, long before it can make the worker do much.
 */
export const RATIO_APPLIES_FROM_BYTES = 16 * 1024 * 1024;

export type DecompressionLimits = {
  readonly maxDecompressedBytes: number;
  readonly maxExpansionRatio: number;
};

/**
 * Decompresses on the fly when the bytes start with the gzip magic number; passes them
 * through otherwise. Either way the bytes handed on are counted: past maxDecompressedBytes,
 * or past maxExpansionRatio times the compressed bytes gunzip has consumed, it throws an
 * UploadLimitExceeded and the source and gunzip are destroyed at once (nothing more is read).
 */
export async function* gunzipIfNeeded(source: Readable, limits: DecompressionLimits): AsyncGenerator<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let length = 0;
  // Gather at least two bytes (a chunk can be a single byte) before deciding.
  while (length < 2) {
    const next = await iterator.next();
    if (next.done) break;
    head.push(Buffer.from(next.value as Uint8Array));
    length += (next.value as Uint8Array).length;
  }
  async function* replay(): AsyncGenerator<Uint8Array> {
    yield* head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value as Uint8Array;
  }
  const first = Buffer.concat(head);
  let out = 0;
  if (!(first[0] === GZIP_MAGIC_0 && first[1] === GZIP_MAGIC_1)) {
    try {
      for await (const chunk of replay()) {
        out += chunk.length;
        if (out > limits.maxDecompressedBytes)
          throw new UploadLimitExceeded(`the upload is larger than ${limits.maxDecompressedBytes} bytes (MERIDIAN_MAX_DECOMPRESSED_BYTES); nothing was stored`);
        yield chunk;
      }
    } finally {
      source.destroy();
    }
    return;
  }
  const gunzip = createGunzip();
  // Errors of either side end both; the loop below sees them. Its own end is awaited by nobody.
  pipeline(Readable.from(replay()), gunzip).catch(() => undefined);
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      out += chunk.length;
      if (out > limits.maxDecompressedBytes) {
        throw new UploadLimitExceeded(
          `the upload expands to more than ${limits.maxDecompressedBytes} bytes (MERIDIAN_MAX_DECOMPRESSED_BYTES); nothing was stored`,
        );
      }
      // bytesWritten: the compressed bytes gunzip has consumed so far, not just the ones read ahead.
      if (out > RATIO_APPLIES_FROM_BYTES && out > limits.maxExpansionRatio * gunzip.bytesWritten) {
        throw new UploadLimitExceeded(
          `the upload expands to more than ${limits.maxExpansionRatio}× its compressed size (MERIDIAN_MAX_EXPANSION_RATIO; stopped at ${out} bytes from ${gunzip.bytesWritten}); nothing was stored`,
        );
      }
      yield chunk;
    }
  } finally {
    gunzip.destroy();
    source.destroy();
  }
}
