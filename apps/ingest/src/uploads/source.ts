import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { MetricsUploadRequested } from '@meridian/domain';
import type { Storage } from '@meridian/storage';

/** The upload's bytes, from the event itself or from the staged object (claim check). */
export async function openUploadBytes(cmd: MetricsUploadRequested, storage: Storage): Promise<Readable> {
  if (cmd.payload !== null) return Readable.from([cmd.payload]);
  if (cmd.staged_object === null) throw new Error('the upload command carries neither a payload nor a staged object');
  return storage.client.getObject(storage.bucket, cmd.staged_object);
}

const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;

/** Decompresses on the fly when the bytes start with the gzip magic number; passes them through otherwise. */
export async function* gunzipIfNeeded(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let length = 0;
  // Gather at least two bytes (a chunk can be a single byte) before deciding.
  while (length < 2) {
    const next = await iterator.next();
    if (next.done) break;
    head.push(Buffer.from(next.value));
    length += next.value.length;
  }
  async function* replay(): AsyncGenerator<Uint8Array> {
    yield* head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  const first = Buffer.concat(head);
  if (first[0] === GZIP_MAGIC_0 && first[1] === GZIP_MAGIC_1) yield* Readable.from(replay()).pipe(createGunzip());
  else yield* replay();
}
