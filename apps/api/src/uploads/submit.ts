import { createHash, randomUUID } from 'node:crypto';
import { DomainError, uploadRequest, type LogWriter, type MetricsUploadRequested, type Position, type Task, type TaskEvent } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';

export type SubmitDeps = {
  readonly producer: () => Promise<LogWriter>;
  readonly codec: EventCodec<TaskEvent>;
  readonly topic: string;
  readonly ackTimeoutMs: number;
  /** The task: in memory while unfinished (or finished a moment ago), else from the tasks read model. */
  readonly find: (taskId: string) => Promise<Task | undefined>;
  /** Resolves once this process has folded the event at `position`. */
  readonly applied: (position: Position | null) => Promise<void>;
};

export type UploadCommand = Omit<MetricsUploadRequested, 'type' | 'task_id'>;

/**
 * The task id of an upload. With an Idempotency-Key it is derived from (user, key), so every
 * retry names the same task — even one whose first attempt reached Kafka after the api had
 * already answered 503 (kafkajs keeps retrying a send it gave up waiting for). The log may
 * then hold the command twice; the fold keeps the first and the worker runs a task once.
 */
export function taskIdFor(userName: string, idempotencyKey: string | null): string {
  if (idempotencyKey === null) return randomUUID();
  // Length-prefixed, so no (user, key) pair can spell the same input as another.
  const h = createHash('sha256').update(`meridian-upload:${userName.length}:${userName}:${idempotencyKey}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50; // a name-based UUID (version 5 layout, SHA-256 bits)
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Writes an upload command to the log and answers with its task id only once Kafka has
 * acknowledged it from all in-sync replicas (and this process has folded it, so the task
 * can be read at once). Kafka unreachable → 503; a retry with the same Idempotency-Key,
 * parameters and body gets the same task ('repeated': its bytes are not needed); anything
 * else under that key → 409, also when a concurrent request with the key reached the log first.
 */
export async function submitUpload(deps: SubmitDeps, task_id: string, command: UploadCommand): Promise<'written' | 'repeated'> {
  // Without a key the id is a fresh random UUID: nothing to look up, so accepting an upload needs
  // only Kafka and storage, not the tasks read model.
  const keyed = command.idempotency_key !== null;
  const known = keyed ? await deps.find(task_id) : undefined;
  if (known) {
    assertSameUpload(known, command);
    return 'repeated';
  }
  const event: MetricsUploadRequested = { type: 'MetricsUploadRequested', task_id, ...command };
  let position: Position | null;
  try {
    const producer = await withTimeout(deps.producer(), deps.ackTimeoutMs, 'kafka');
    position = await withTimeout(appendEvents(producer, deps.codec, deps.topic, task_id, [event]), deps.ackTimeoutMs, 'kafka');
  } catch (cause) {
    throw new DomainError('unavailable', 'the event log is not reachable; the upload was not accepted, retry later with the same Idempotency-Key', [], { cause });
  }
  // The command is in the log now: a fold that lags behind does not undo that (nor may the
  // caller remove the staged bytes); the task may read as 404 for a moment.
  await deps.applied(position).catch(() => undefined);
  // The fold keeps the first command of a task id: ours, or a concurrent one under the same key.
  // The command is accepted whatever this check meets: a read model that does not answer now must
  // not turn an accepted upload into a 503 (a retry without a key would then run it twice).
  const kept = keyed ? await deps.find(task_id).catch(() => undefined) : undefined;
  if (kept) assertSameUpload(kept, command);
  return 'written';
}

function assertSameUpload(task: Task, command: UploadCommand): void {
  if (task.user_name !== command.user_name || task.payload_sha256 !== command.payload_sha256.toString('hex') || task.upload_request !== uploadRequest(command)) {
    throw new DomainError('conflict', 'this Idempotency-Key was used for a different upload (body or parameters)');
  }
}
