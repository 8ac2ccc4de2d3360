import { createHash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { checkJsonUpload } from './json-upload-check.ts';

/**
 * A worker thread of the JSON upload check pool: hashes and checks one body at a time, so
 * that a 16 MiB body costs the api's event loop a copy, not a parse. Answers with the body's
 * SHA-256 and the outcome of checkJsonUpload, and hands the body's memory back.
 */
const { maxValues } = workerData as { maxValues: number };
parentPort!.on('message', (bytes: Uint8Array) => {
  const sha256 = createHash('sha256').update(bytes).digest();
  const check = checkJsonUpload(bytes, maxValues);
  parentPort!.postMessage({ bytes, sha256, check }, [bytes.buffer as ArrayBuffer]); // the body goes back to be staged
});
