import { DomainError, type FileDefinitionRequested, type LogWriter, type Position, type TaskEvent } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';

export type FileSubmitDeps = {
  readonly producer: () => Promise<LogWriter>;
  readonly codec: EventCodec<TaskEvent>;
  /** The tasks topic: the command starts a task like any upload. */
  readonly topic: string;
  readonly ackTimeoutMs: number;
  /** Resolves once this process has folded the task event at `position`. */
  readonly applied: (position: Position | null) => Promise<void>;
};

/**
 * Writes the file-definition command to the log, keyed by task id, and returns only once
 * Kafka acknowledged it from all in-sync replicas and this process folded it (so the task
 * is readable at once). Kafka unreachable → 503: the caller removes the staged bytes (a file
 * has no Idempotency-Key: a command that lands late fails its task for want of them, rather
 * than define a file the client was told was refused).
 */
export async function submitFileDefinition(deps: FileSubmitDeps, command: FileDefinitionRequested): Promise<void> {
  let position: Position | null;
  try {
    const producer = await withTimeout(deps.producer(), deps.ackTimeoutMs, 'kafka');
    position = await withTimeout(appendEvents(producer, deps.codec, deps.topic, command.task_id, [command]), deps.ackTimeoutMs, 'kafka');
  } catch (cause) {
    throw new DomainError('unavailable', 'the event log is not reachable; the file was not accepted, retry later', [], { cause });
  }
  // The command is in the log now: a fold that lags behind does not undo that (nor may the
  // caller remove the staged bytes); the task may read as 404 for a moment.
  await deps.applied(position).catch(() => undefined);
}
