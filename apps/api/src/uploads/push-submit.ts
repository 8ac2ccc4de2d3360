import {
  DomainError,
  uploadRequest,
  validationError,
  type MetricsPushed,
  type MetricsUploadRequested,
  type Position,
  type Task,
  type UploadFailed,
} from '@meridian/domain';
import { withTimeout } from '@meridian/observability';
import { releaseNow } from '../http/release-memory.ts';
import type { PushDecision, PushRequest } from './push-decision.ts';
import type { PushLog } from './push-log.ts';
import type { CommandLog } from '../tasks/submit-command.ts';

// The push path's last step, shared by the JSON upload route and the telemetry protocols' routes:
// a decided push written to the log with its task, answered as an upload is.

/** What writing an upload's command to the tasks log needs. */
export type SubmitDeps = CommandLog & {
  /** The task: in memory while unfinished (or finished a moment ago), else from the tasks read model. */
  readonly find: (taskId: string) => Promise<Task | undefined>;
  /** Resolves once this process has folded the task's partition of the tasks log to its end (pushes only). */
  readonly settled?: (taskId: string) => Promise<void>;
};

/**
 * The push path: a JSON upload of at most `maxBytes` is decided here, on the check pool's
 * worker, and written to the log with its outcome in one transaction (push-log.ts): no staging,
 * no second parse in the ingest worker, and an invalid one is answered at once.
 */
export type PushDeps = {
  /** Largest JSON body that takes the push path (MERIDIAN_PUSH_MAX_BYTES). */
  readonly maxBytes: number;
  readonly log: Pick<PushLog, 'append'>;
  /** Points accepted (by anyone) and not yet projected, past which a push gets 429 (MERIDIAN_PUSH_MAX_LAG_POINTS). */
  readonly maxLagPoints: number;
  readonly awaitingProjection: () => number;
  /** Partitions of the points topic as the broker has them (a push's batches each hold one partition's metrics). */
  readonly pointsPartitions: () => Promise<number>;
  /** How a push is parsed and batched: as the ingest worker does a staged upload. */
  readonly parse: Pick<PushRequest, 'batch' | 'maxLineLength' | 'maxColumns' | 'maxJsonDocumentLength' | 'timestampDeltas' | 'packedPoints'>;
};

/** What a push's MetricsPushed says of its request, before its outcome. */
export type PushedRequest = Pick<
  MetricsPushed,
  'task_id' | 'user_name' | 'at' | 'metric_name' | 'on_error' | 'source' | 'payload_bytes' | 'payload_sha256' | 'idempotency_key'
>;

/**
 * Writes a decided push to the log, its task's event with it, and answers as an upload does:
 * 'written' once Kafka has the transaction from every in-sync replica (and this process has
 * folded its task), 'repeated' for a retry under an Idempotency-Key of a push already written,
 * 409 for anything else under that key. A push refused whole by its rows is a 400 naming them,
 * at once: there is nothing for a task to follow. Past the bound on points not yet projected,
 * 429 with Retry-After: the producer slows down, and what was accepted stays fresh.
 * `namesTask`: whether the answer gives the task's id (a JSON upload's 202), so that the task
 * must be found on this instance at once: the answer then also waits for this process's fold
 * to have read its MetricsPushed. A protocol's answer names no task: it is answered once the
 * commit is durable, which is what it promises, and saves the fold's round trip.
 */
export async function submitPush(
  submit: SubmitDeps,
  push: PushDeps,
  request: PushedRequest,
  decision: PushDecision,
  namesTask = true,
): Promise<'written' | 'repeated'> {
  const keyed = request.idempotency_key !== null;
  // A first attempt under the key may be in the log and not yet folded here (it came to another
  // instance, or its answer was lost): the fold reads the task's partition to its end first.
  const known = keyed ? await storedTask(submit, request.task_id) : undefined;
  if (known) {
    assertSameUpload(known, request);
    return 'repeated';
  }
  if (decision.kind === 'refused') throw refusedRows(decision.end);
  const lag = push.awaitingProjection();
  if (lag > push.maxLagPoints) {
    throw new DomainError(
      'too_many',
      `${lag} accepted points are waiting to be stored (MERIDIAN_PUSH_MAX_LAG_POINTS is ${push.maxLagPoints}); retry in a moment`,
    );
  }
  const { batches, rows_total, points_accepted, rows_rejected, errors, metrics } = decision;
  let position: Position;
  try {
    // Bounded by the push log (MERIDIAN_KAFKA_ACK_TIMEOUT_MS), which settles a transaction it gives up on before it says so.
    position = await push.log.append({ batches, pushed: { ...request, rows_total, points_accepted, rows_rejected, errors, metrics } });
    // Committed: the log client has sent its copy, so the batches are done with. Not on a failure,
    // where a transaction cut short by the deadline may still be encoding them.
    releaseNow(batches.map((b) => b.value));
  } catch (cause) {
    // A commit cut short may have landed after all: then the push is stored, and says so.
    const landed = await storedTask(submit, request.task_id).catch(() => undefined);
    if (landed) {
      assertSameUpload(landed, request);
      return 'written';
    }
    throw new DomainError('unavailable', 'the event log is not reachable; the upload was not accepted, retry later with the same Idempotency-Key', [], {
      cause,
    });
  }
  if (!namesTask) return 'written';
  await submit.applied(position).catch(() => undefined);
  const kept = keyed ? await submit.find(request.task_id).catch(() => undefined) : undefined;
  if (kept) assertSameUpload(kept, request);
  return 'written';
}

/** The task as the log holds it, once this process has read the task's partition to its end; 503 when the log does not answer in time. */
async function storedTask(submit: SubmitDeps, taskId: string): Promise<Task | undefined> {
  try {
    if (submit.settled) await withTimeout(submit.settled(taskId), submit.ackTimeoutMs, 'the tasks log');
  } catch (cause) {
    throw new DomainError('unavailable', 'the event log is not reachable; the upload was not accepted, retry later with the same Idempotency-Key', [], {
      cause,
    });
  }
  return submit.find(taskId);
}

/** A push with invalid rows under on_error=fail (or a metric it may not write): 400 with the rows, as its task would have failed. */
function refusedRows(end: UploadFailed): DomainError {
  const errors = end.errors.map(({ row, column, reason }) =>
    row > 0 ? { field: column, reason, row } : { field: column === 'row' ? 'body' : column, reason },
  );
  return validationError(end.reason, errors);
}

export function assertSameUpload(
  task: Task,
  command: Pick<MetricsUploadRequested, 'user_name' | 'payload_sha256' | 'metric_name' | 'on_error'> & { readonly source: string },
): void {
  if (
    task.user_name !== command.user_name ||
    task.payload_sha256 !== command.payload_sha256.toString('hex') ||
    task.upload_request !== uploadRequest(command)
  ) {
    throw new DomainError('conflict', 'this Idempotency-Key was used for a different upload (body or parameters)');
  }
}
