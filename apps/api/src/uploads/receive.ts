import type { Context } from 'koa';
import { canWrite, canWriteSomeMetric, DomainError, metricNameProblem, validationError, type UserRecord } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { BlobStore } from '../blob-store.ts';
import type { BodyBudget } from '../http/body-budget.ts';
import { releaseNow } from '../http/release-memory.ts';
import type { OneAtATime } from '../http/one-at-a-time.ts';
import type { ApiMetrics } from '../observability/metrics.ts';
import type { UploadAdmission } from './admission.ts';
import type { JsonUploadChecker } from './json-check-pool.ts';
import { jsonUploadText } from './json-upload.ts';
import { submitPush, type PushDeps, type SubmitDeps } from './push-submit.ts';
import { readHeldBody, tooLarge } from './read-body.ts';
import { assertDeclaredSize, isMultipart, stageBody, stageBytes, stageForm, type FileLimit } from './stage-file.ts';
import { stagedUploadKey, submitStaged, type UploadCommand } from './staged-submit.ts';
import { taskIdFor } from './task-id.ts';

// Receiving an upload, JSON body or file: checked (caps, access, shape), then either decided here
// and written with its outcome (a push: push-submit.ts) or its bytes staged and its command
// durably in the tasks log (staged-submit.ts); then 202 with the task to follow. The ingest worker
// runs a staged upload's command (apps/ingest/src/uploads/upload-commands.ts).

export type UploadLimits = {
  readonly jsonBodyBytes: number;
  readonly uploadBytes: number;
  readonly pointsPerJsonUpload: number;
};

export type Receivers = {
  readonly submit: SubmitDeps;
  /** Absent: every upload is staged for the ingest worker. */
  readonly push: PushDeps | undefined;
  readonly storage: BlobStore;
  readonly limits: UploadLimits;
  /** Parses and hashes JSON upload bodies off the event loop (uploads/json-check-pool.ts). */
  readonly jsonChecker: Pick<JsonUploadChecker, 'check'>;
  readonly admission: UploadAdmission;
  /**
   * Pushes under one Idempotency-Key, one at a time: a push's points are in the log once it is
   * written, so the second of two concurrent ones must find the first's task before it writes.
   */
  readonly keyedPushes: OneAtATime;
  readonly metrics: Pick<ApiMetrics, 'uploadAccepted'> | undefined;
  readonly bodies: BodyBudget | undefined;
};

export type UploadRequest = { readonly user: UserRecord; readonly on_error: 'fail' | 'skip'; readonly idempotency: string | undefined };

/** POST /api/v1/metrics/upload: a push when small enough, else staged like a file. */
export async function receiveJsonUpload(r: Receivers, ctx: Context, request: UploadRequest): Promise<void> {
  const { user, idempotency } = request;
  assertMayUpload(user);
  const taskId = taskIdFor(user.user_name, idempotency ?? null);
  const push = r.push;
  // A push waits in no backlog: it queues nothing in front of the ingest worker (its bound is the projector's lag).
  const declared = ctx.get('Content-Length');
  const likelyPush = push !== undefined && declared !== '' && Number(declared) <= push.maxBytes;
  await r.admission.run(
    ctx,
    user,
    taskId,
    async () => {
      const admitted = performance.now();
      const text = await jsonUploadText(await readHeldBody(ctx, r.limits.jsonBodyBytes, r.bodies, user.user_name), ctx.get('Content-Type'));
      const read = performance.now();
      const at = Date.now();
      const pushRequest =
        push !== undefined && text.length <= push.maxBytes
          ? { task_id: taskId, at, on_error: request.on_error, user, pointsPartitions: await pointsPartitions(push), ...push.parse }
          : undefined;
      // Parsed and hashed on a worker thread, but for a small body (MERIDIAN_JSON_UPLOAD_CHECK_INLINE_BYTES):
      // a 16 MiB body must not hold every other request, and a small one costs less here than the hand-over.
      const { body: raw, sha256, check, decision } = await r.jsonChecker.check(text, pushRequest);
      const checked = performance.now();
      if (check.kind === 'invalid') throw validationError(check.message, check.errors);
      if (check.kind === 'too_many_values') {
        throw new DomainError(
          'payload_too_large',
          `at most ${r.limits.pointsPerJsonUpload} values per JSON upload; send larger sets as a file to /api/v1/metrics_file_upload`,
        );
      }
      assertWritable(user, check.metric_name, 'body.metric_name');
      const described = {
        metric_name: check.metric_name,
        on_error: request.on_error,
        source: 'json_body',
        payload_bytes: raw.length,
        payload_sha256: sha256,
        idempotency_key: idempotency ?? null,
      } as const;
      let outcome: 'written' | 'repeated';
      if (push !== undefined && decision !== null) {
        const pushed = { task_id: taskId, user_name: user.user_name, at, ...described };
        const submit = () => submitPush(r.submit, push, pushed, decision);
        try {
          outcome = idempotency === undefined ? await submit() : await r.keyedPushes.run(taskId, submit);
        } finally {
          releaseNow([raw]); // a push's body is not in the log (its batches are): only its length and hash are kept
        }
        logPushTimes(ctx, { admitted, read, checked, written: performance.now() });
      } else {
        // Staged like a file: the command carries only the reference, so reading the tasks log stays cheap.
        const stagedKey = stagedUploadKey(taskId);
        await stageBytes(r.storage, stagedKey, raw);
        outcome = await submitStaged(r, taskId, {
          user_name: user.user_name,
          at,
          ...described,
          payload: null,
          staged_object: stagedKey,
        } satisfies UploadCommand);
      }
      if (outcome === 'written') r.metrics?.uploadAccepted('json_body', described.payload_bytes, check.values);
      accepted(ctx, taskId);
    },
    !likelyPush,
  );
}

/** POST /api/v1/metrics_file_upload: the file streamed to staging, its command to the log. */
export async function receiveFileUpload(r: Receivers, ctx: Context, request: UploadRequest & { readonly metric_name: string | undefined }): Promise<void> {
  const { user, idempotency } = request;
  assertMayUpload(user);
  if (request.metric_name !== undefined) assertWritable(user, request.metric_name, 'query.metric_name');
  const taskId = taskIdFor(user.user_name, idempotency ?? null);
  await r.admission.run(ctx, user, taskId, async () => {
    const limit: FileLimit = { bytes: r.limits.uploadBytes, tooLarge: () => tooLarge(r.limits.uploadBytes, 'the file') };
    assertDeclaredSize(ctx.req, limit);
    const key = stagedUploadKey(taskId);
    const staged = isMultipart(ctx.req)
      ? await stageForm(ctx.req, r.storage, key, 'the upload', () => limit)
      : await stageBody(ctx.req, r.storage, key, 'the upload', limit);
    // An empty file stages nothing (stageForm, stageBody): refused without a command.
    if (staged.bytes === 0) throw validationError('the file is empty', [{ field: 'file', reason: 'empty' }]);
    const command = {
      user_name: user.user_name,
      at: Date.now(),
      idempotency_key: idempotency ?? null,
      metric_name: request.metric_name ?? null,
      on_error: request.on_error,
      source: 'file',
      payload: null,
      staged_object: staged.objectKey,
      payload_bytes: staged.bytes,
      payload_sha256: staged.sha256,
    } satisfies UploadCommand;
    const outcome = await submitStaged(r, taskId, command);
    if (outcome === 'written') r.metrics?.uploadAccepted('file', staged.bytes);
    accepted(ctx, taskId);
  });
}

/** A caller who may write no metric at all is refused before any byte of the upload is read or staged. */
function assertMayUpload(user: UserRecord): void {
  if (!canWriteSomeMetric(user)) throw new DomainError('forbidden', 'uploading needs rw access to at least one metric');
}

/** Checks the metric name and the caller's rw access before anything is stored. */
function assertWritable(user: UserRecord, metricName: string, field: string): void {
  const problem = metricNameProblem(metricName);
  if (problem) throw validationError(`invalid metric name: ${problem}`, [{ field, reason: problem }]);
  if (!canWrite(user, metricName)) throw new DomainError('forbidden', 'uploading needs rw access to this metric');
}

/**
 * Where a push's answer waited, at debug level: its body read, its check and decision (the check
 * pool's queue included), and its write (a writer, the transaction, this process's fold reading
 * its task back); the push log's line for its transaction splits the write.
 */
function logPushTimes(ctx: Context, at: { admitted: number; read: number; checked: number; written: number }): void {
  const log = ctx.state.log as Logger | undefined;
  if (!log?.isLevelEnabled('debug')) return;
  const ms = (n: number) => Math.round(n * 10) / 10;
  log.debug({ read_ms: ms(at.read - at.admitted), check_ms: ms(at.checked - at.read), write_ms: ms(at.written - at.checked) }, 'push timed');
}

function accepted(ctx: Context, taskId: string): void {
  ctx.status = 202;
  ctx.set('Location', `/api/v1/tasks/${taskId}`);
  ctx.body = { task_id: taskId };
}

async function pointsPartitions(push: PushDeps): Promise<number> {
  try {
    return await push.pointsPartitions();
  } catch (cause) {
    throw new DomainError('unavailable', 'the event log is not reachable; the upload was not accepted, retry later with the same Idempotency-Key', [], {
      cause,
    });
  }
}
