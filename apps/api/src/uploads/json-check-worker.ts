import { parentPort, workerData } from 'node:worker_threads';
import { checkJsonBody } from './json-check.ts';
import type { PushRequest } from './push-decision.ts';

/**
 * A worker thread of the JSON upload check pool: hashes and checks one body at a time, so
 * that a 16 MiB body costs the api's event loop a copy, not a parse. Answers with the body's
 * SHA-256 and the outcome of checkJsonUpload, and hands the body's memory back. A body sent
 * with a push request that passes the check is decided here too (push-decision.ts), and its
 * encoded batches travel back without a copy.
 */
const { maxValues } = workerData as { maxValues: number };
parentPort!.on('message', (job: { bytes: Uint8Array; push: PushRequest | null }) => {
  void answer(job);
});

async function answer({ bytes, push }: { bytes: Uint8Array; push: PushRequest | null }): Promise<void> {
  const { sha256, check, decision } = await checkJsonBody(bytes, push, maxValues);
  const transfer: ArrayBuffer[] = [bytes.buffer as ArrayBuffer]; // the body goes back to be staged
  if (decision?.kind === 'stored') for (const b of decision.batches) transfer.push(b.value.buffer as ArrayBuffer);
  parentPort!.postMessage({ bytes, sha256, check, decision }, transfer);
}
