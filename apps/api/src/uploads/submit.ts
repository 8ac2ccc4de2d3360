import type { Producer } from 'kafkajs';
import { DomainError, type MetricsUploadRequested, type TaskEvent, type TasksState } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { appendEvents, type Position } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';

export type SubmitDeps = {
  readonly producer: () => Promise<Producer>;
  readonly codec: EventCodec<TaskEvent>;
  readonly topic: string;
  readonly ackTimeoutMs: number;
  readonly tasks: () => TasksState;
  /** Resolves once this process has folded the event at `position`. */
  readonly applied: (position: Position | null) => Promise<void>;
};

export type UploadCommand = Omit<MetricsUploadRequested, 'type' | 'task_id'>;

/**
 * Writes an upload command to the log and answers with its task id only once Kafka has
 * acknowledged it from all in-sync replicas (and this process has folded it, so the task
 * can be read at once). Kafka unreachable → 503, and the client may retry with the same
 * Idempotency-Key.
 */
export async function submitUpload(deps: SubmitDeps, task_id: string, command: UploadCommand): Promise<string> {
  const repeated = findIdempotent(deps.tasks(), command);
  if (repeated) return repeated;
  const event: MetricsUploadRequested = { type: 'MetricsUploadRequested', task_id, ...command };
  let position: Position | null;
  try {
    const producer = await withTimeout(deps.producer(), deps.ackTimeoutMs, 'kafka');
    position = await withTimeout(appendEvents(producer, deps.codec, deps.topic, task_id, [event]), deps.ackTimeoutMs, 'kafka');
  } catch (cause) {
    throw new DomainError('unavailable', 'the event log is not reachable; the upload was not accepted, retry later', [], { cause });
  }
  await deps.applied(position);
  return task_id;
}

/** A retry with the same Idempotency-Key and body gets the first task; with another body, 409. */
function findIdempotent(tasks: TasksState, command: UploadCommand): string | null {
  if (command.idempotency_key === null) return null;
  for (const task of tasks.values()) {
    if (task.user_name !== command.user_name || task.idempotency_key !== command.idempotency_key) continue;
    if (task.payload_sha256 !== command.payload_sha256.toString('hex')) {
      throw new DomainError('conflict', 'this Idempotency-Key was used with a different body');
    }
    return task.task_id;
  }
  return null;
}
