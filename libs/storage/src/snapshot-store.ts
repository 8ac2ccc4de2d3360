import { pipeline, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { promisify } from 'node:util';
import { createGunzip, gzip } from 'node:zlib';
import type { SnapshotStore } from '@meridian/domain';
import type { Storage } from './client.ts';

const gzipAsync = promisify(gzip);

/**
 * The text of a gzipped object, decompressed as it arrives: neither the compressed bytes nor the
 * decompressed ones are ever held whole (each chunk becomes text and is let go), so a start holds
 * the snapshot's text once, beside what JSON.parse makes of it.
 */
async function gunzippedText(body: Readable): Promise<string> {
  const decoder = new StringDecoder('utf8');
  let text = '';
  // pipeline: a failure of the body, or of its gzip, ends the read with it.
  for await (const chunk of pipeline(body, createGunzip(), () => undefined)) text += decoder.write(chunk as Buffer);
  return text + decoder.end();
}

/** Where the snapshots of a topic live in the service's bucket: beside staging/ and blobs/, never expired by a lifecycle rule. */
export const snapshotPrefix = (topic: string): string => `_snapshots/${topic}/`;

// Zero-padded, so the bucket lists them oldest first and a name sorts as its number.
const NAME = /^(\d{20})\.json\.gz$/;
const nameOf = (position: number) => `${String(position).padStart(20, '0')}.json.gz`;

/** The snapshots of one topic as gzipped JSON objects, named by position (`_snapshots/<topic>/<position>.json.gz`). */
export function createSnapshotStore(storage: Storage, topic: string): SnapshotStore {
  const { client, bucket } = storage;
  const prefix = snapshotPrefix(topic);

  async function positions(): Promise<number[]> {
    const found: number[] = [];
    try {
      for await (const item of client.listObjectsV2(bucket, prefix, true) as AsyncIterable<{ name?: string }>) {
        const match = NAME.exec(item.name?.slice(prefix.length) ?? '');
        if (match) found.push(Number(match[1]));
      }
    } catch (error) {
      // A CLI may run before any server made the bucket: then there is no snapshot yet.
      if ((error as { code?: string }).code !== 'NoSuchBucket') throw error;
    }
    return found.sort((a, b) => b - a);
  }

  return {
    positions,
    async put(position, document) {
      const body = await gzipAsync(Buffer.from(document, 'utf8'));
      await client.putObject(bucket, prefix + nameOf(position), body, body.length, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
    },
    async read(position) {
      return gunzippedText(await client.getObject(bucket, prefix + nameOf(position)));
    },
    async prune(keep) {
      const old = (await positions()).slice(keep);
      if (old.length > 0)
        await client.removeObjects(
          bucket,
          old.map((p) => prefix + nameOf(p)),
        );
    },
  };
}
