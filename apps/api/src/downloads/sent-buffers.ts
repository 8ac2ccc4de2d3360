import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { releaseNow } from '../http/release-memory.ts';

/**
 * A response body whose buffers are freed as soon as the socket has written them, not when V8
 * next collects. A streamed download makes a new buffer a batch (some 2 MB at the default
 * batch), and their small JavaScript objects hardly fill the heap: V8 collected them only once
 * some 64 MB and more had piled up outside the heap, which was the api's RSS growth in its first
 * large Arrow download.
 *
 * Written is what left for the socket minus what is still queued: this body's own buffer, the
 * response's and its socket's (their writableLength counts a write until the kernel took it;
 * the chunked encoding's framing counts as queued too, so the count errs on the safe side).
 * Writes leave in order, so every buffer that ends within the written bytes is done with. Once
 * the response has finished, all of them are; when it is torn down first, they are left to V8.
 */
export function releasedOnceSent(chunks: AsyncIterable<Buffer>, response: ServerResponse): Readable {
  const queued: Buffer[] = [];
  let produced = 0;
  let releasedUpTo = 0;
  const releaseWritten = () => {
    if (response.destroyed) return;
    const written = produced - body.readableLength - response.writableLength;
    while (queued.length > 0 && releasedUpTo + queued[0]!.length <= written) {
      const sent = queued.shift()!;
      releasedUpTo += sent.length;
      releaseNow([sent]);
    }
  };
  const body = Readable.from(
    (async function* () {
      for await (const chunk of chunks) {
        releaseWritten();
        queued.push(chunk);
        produced += chunk.length;
        yield chunk;
      }
    })(),
    { objectMode: false },
  );
  response.once('finish', () => releaseNow(queued.splice(0)));
  return body;
}
