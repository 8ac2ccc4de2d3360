import { gunzip } from 'node:zlib';
import { tooLarge, malformed } from './decoded.ts';

/**
 * Gunzips a request body (Content-Encoding: gzip) to at most `maxBytes`: zlib stops at the
 * bound, so a bomb costs `maxBytes` and no more. On the thread pool, not the event loop. The one
 * module of this package that reaches Node's zlib: the decoders take bytes already decompressed.
 */
export function gunzipBounded(body: Uint8Array, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    gunzip(body, { maxOutputLength: maxBytes }, (error, out) => {
      if (error === null) resolve(out);
      else if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) {
        reject(tooLarge(`the body is more than ${maxBytes} bytes once gunzipped`));
      } else reject(malformed(`the body is not valid gzip: ${error.message}`));
    });
  });
}
