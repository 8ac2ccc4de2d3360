import { randomUUID } from 'node:crypto';
import type { MetricsUploadRequested } from '@meridian/domain';
import { STAGING_PREFIX } from '@meridian/storage';
import type { BlobStore } from '../blob-store.ts';
import { submitCommand } from '../tasks/submit-command.ts';
import { assertSameUpload, type SubmitDeps } from './push-submit.ts';
import { discard, mayDiscard } from './stage-file.ts';

/** An upload's command as its route fills it in; the task id and type are added when it is written. */
export type UploadCommand = Omit<MetricsUploadRequested, 'type' | 'task_id'>;

/**
 * Where an upload's bytes wait for the worker, under the prefix the staging expiry rule covers;
 * unique per request: a retry of the same task must not overwrite (or discard) the first one's bytes.
 */
export function stagedUploadKey(taskId: string): string {
  return `${STAGING_PREFIX}uploads/${taskId}/${randomUUID()}`;
}

/**
 * Writes the command of staged bytes. They go again when the log refused it for good (not after
 * a 503: see mayDiscard), and when the task exists already (a retry: the first attempt's bytes
 * serve it).
 */
export async function submitStaged(
  deps: { readonly submit: SubmitDeps; readonly storage: BlobStore },
  taskId: string,
  command: UploadCommand & { readonly staged_object: string },
): Promise<'written' | 'repeated'> {
  const outcome = await submitUpload(deps.submit, taskId, command).catch(async (e: unknown) => {
    if (mayDiscard(e)) await discard(deps.storage, command.staged_object);
    throw e;
  });
  if (outcome === 'repeated') await discard(deps.storage, command.staged_object);
  return outcome;
}

/**
 * Writes an upload command to the log and answers with its task id only once Kafka has
 * acknowledged it from all in-sync replicas (and this process has folded it, so the task
 * can be read at once). Kafka unreachable → 503; a retry with the same Idempotency-Key,
 * parameters and body gets the same task ('repeated': its bytes are not needed); anything
 * else under that key → 409, also when a concurrent request with the key reached the log first.
 */
async function submitUpload(deps: SubmitDeps, task_id: string, command: UploadCommand): Promise<'written' | 'repeated'> {
  // Without a key the id is a fresh random UUID: nothing to look up, so accepting an upload needs
  // only Kafka and storage, not the tasks read model.
  const keyed = command.idempotency_key !== null;
  const known = keyed ? await deps.find(task_id) : undefined;
  if (known) {
    assertSameUpload(known, command);
    return 'repeated';
  }
  await submitCommand(deps, { type: 'MetricsUploadRequested', task_id, ...command }, 'the upload was not accepted, retry later with the same Idempotency-Key');
  // The fold keeps the first command of a task id: ours, or a concurrent one under the same key.
  // The command is accepted whatever this check meets: a read model that does not answer now must
  // not turn an accepted upload into a 503 (a retry without a key would then run it twice).
  const kept = keyed ? await deps.find(task_id).catch(() => undefined) : undefined;
  if (kept) assertSameUpload(kept, command);
  return 'written';
}
