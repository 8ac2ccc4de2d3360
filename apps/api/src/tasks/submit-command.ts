import { DomainError, type LogWriter, type Position, type TaskEvent } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';

/** Where a command that starts a task is written: the tasks log, through this process's writer and fold. */
export type CommandLog = {
  readonly producer: () => Promise<LogWriter>;
  readonly codec: EventCodec<TaskEvent>;
  /** The tasks topic. */
  readonly topic: string;
  readonly ackTimeoutMs: number;
  /** Resolves once this process has folded the task event at `position`. */
  readonly applied: (position: Position | null) => Promise<void>;
};

/**
 * Writes a command that starts a task (an upload, a file definition), keyed by its task id, and
 * returns only once Kafka has acknowledged it from all in-sync replicas and this process has
 * folded it, so the task is readable at once. Kafka unreachable (or slower than the ack timeout)
 * → 503, with `retry` telling the caller how to try again.
 */
export async function submitCommand(log: CommandLog, command: TaskEvent, retry: string): Promise<void> {
  let position: Position | null;
  try {
    const producer = await withTimeout(log.producer(), log.ackTimeoutMs, 'kafka');
    position = await withTimeout(appendEvents(producer, log.codec, log.topic, command.task_id, [command]), log.ackTimeoutMs, 'kafka');
  } catch (cause) {
    throw new DomainError('unavailable', `the event log is not reachable; ${retry}`, [], { cause });
  }
  // The command is in the log now: a fold that lags behind does not undo that (nor may the
  // caller remove the staged bytes); the task may read as 404 for a moment.
  await log.applied(position).catch(() => undefined);
}
