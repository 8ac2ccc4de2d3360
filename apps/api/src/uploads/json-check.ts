import { createHash } from 'node:crypto';
import { checkJsonUpload, type JsonUploadCheck } from './json-upload-check.ts';
import { decidePush, type PushDecision, type PushRequest } from './push-decision.ts';

/** What a JSON upload body's check finds: its SHA-256, its shape and, for a push that passed, its decision. */
export type JsonBodyCheck = { readonly sha256: Buffer; readonly check: JsonUploadCheck; readonly decision: PushDecision | null };

/**
 * Hashes and checks one JSON upload body and, when asked to decide a push and the check
 * passes, decides it (push-decision.ts): the one check, whether a check worker runs it or the
 * event loop does for a small body (json-check-pool.ts).
 */
export async function checkJsonBody(bytes: Uint8Array, push: PushRequest | null, maxValues: number): Promise<JsonBodyCheck> {
  const sha256 = createHash('sha256').update(bytes).digest();
  const check = checkJsonUpload(bytes, maxValues);
  const decision = push !== null && check.kind === 'ok' ? await decidePush(bytes, push) : null;
  return { sha256, check, decision };
}
