import { createHash, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  assertTaskRoom,
  canWrite,
  canWriteSomeMetric,
  DomainError,
  metricNameProblem,
  validationError,
  type MetricsUploadRequested,
  type Position,
  type UnfinishedTasks,
  type UserRecord,
} from '@meridian/domain';
import { appendEvents } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';
import { STAGING_PREFIX } from '@meridian/storage';
import type { BlobStore } from '../blob-store.ts';
import type { PerUserSlots } from '../http/per-user-slots.ts';
import { holdOpen } from '../http/hold-open.ts';
import { OneAtATime } from '../http/one-at-a-time.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { ApiMetrics } from '../observability/metrics.ts';
import type { JsonUploadChecker } from './json-check-pool.ts';
import { jsonUploadText } from './json-upload.ts';
import { readBody, tooLarge } from './read-body.ts';
import { assertDeclaredSize, discard, isMultipart, mayDiscard, stageBody, stageBytes, stageForm, type FileLimit } from './stage-file.ts';
import { assertSameUpload, submitPush, type PushDeps, type SubmitDeps } from './push-submit.ts';

// Accepting an upload, JSON body or file: checked (caps, access, shape), its bytes staged, its
// command durably in the tasks log (submitUpload, below), then 202 with the task to follow.
// The ingest worker runs the command (apps/ingest/src/uploads/upload-commands.ts).

type UploadCommand = Omit<MetricsUploadRequested, 'type' | 'task_id'>;

export type UploadLimits = {
  readonly jsonBodyBytes: number;
  readonly uploadBytes: number;
  readonly pointsPerJsonUpload: number;
};

/** Per-user caps on uploads: bodies received at once here, and unfinished tasks (from the tasks fold's counts). */
type UploadCaps = {
  readonly inFlight: PerUserSlots;
  readonly queuedTasks: number;
  readonly unfinished: () => UnfinishedTasks;
  /** Unfinished tasks of a user from which their next upload waits for one to end (MERIDIAN_UPLOAD_BACKLOG_PER_USER), at most `waitMs`. */
  readonly backlog: { readonly perUser: number; readonly waitMs: number; readonly untilOneEnds: (userName: string, ms: number, signal: AbortSignal) => Promise<void> };
};

export type UploadDeps = {
  readonly submit: SubmitDeps;
  /** Absent: every upload is staged for the ingest worker. */
  readonly push?: PushDeps;
  readonly storage: BlobStore;
  readonly limits: UploadLimits;
  /** Parses and hashes JSON upload bodies off the event loop (uploads/json-check-pool.ts). */
  readonly jsonChecker: Pick<JsonUploadChecker, 'check'>;
  readonly caps?: UploadCaps;
  readonly metrics?: Pick<ApiMetrics, 'uploadAccepted'>;
};

const taskAccepted = z.object({ task_id: z.uuid() });
const onError = z.enum(['fail', 'skip']).default('fail').describe('fail: one invalid row fails the whole upload and nothing is stored; skip: valid rows are stored and the rejected ones reported');
/** The optional Idempotency-Key header: a retry with the same key, parameters and body gets the same task. */
const uploadHeaders = z.object({
  'idempotency-key': z.string().regex(/^[\x21-\x7e]{1,200}$/, 'must be 1 to 200 visible ASCII characters').optional()
    .describe('Idempotency-Key: a retry with the same key, parameters and body answers with the same task and stores nothing twice; anything else under the key → 409'),
});

const jsonUploadBody = z.object({
  metric_name: z.string().describe('The metric all values belong to.'),
  values: z.array(z.object({
    timestamp: z.string().describe('YYYY-MM-DDTHH:MM:SS with an offset: +hhmm, -hhmm, +hh:mm or Z; fractional seconds up to milliseconds'),
    value: z.number().describe('A finite number'),
  })),
});

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
 * Where an upload's bytes wait for the worker, under the prefix the staging expiry rule covers;
 * unique per request: a retry of the same task must not overwrite (or discard) the first one's bytes.
 */
function stagedUploadKey(taskId: string): string {
  return `${STAGING_PREFIX}uploads/${taskId}/${randomUUID()}`;
}

function accepted(ctx: Context, taskId: string): void {
  ctx.status = 202;
  ctx.set('Location', `/api/v1/tasks/${taskId}`);
  ctx.body = { task_id: taskId };
}

/** What both upload routes say of the per-user backlog, in the OpenAPI document. */
const BACKLOG_DOC = 'While the caller has MERIDIAN_UPLOAD_BACKLOG_PER_USER (default 8) unfinished tasks, a new upload waits, before its body is read, until one of them ends, at most MERIDIAN_UPLOAD_BACKLOG_WAIT_MS (default 10 s), then 429 with Retry-After: a producer faster than ingest gets slower answers, and what it has accepted stays fresh.';

/**
 * Holds an upload while its user has `backlog.perUser` unfinished tasks, until one of them ends
 * (woken by the tasks fold), at most `backlog.waitMs`; then 429. Bounding what one user queues in
 * front of the ingest worker bounds the freshness of their uploads, and a user sending faster
 * than ingest drains feels it as slower 202s, not as a queue others wait behind. The request is
 * held open on purpose (holdOpen: the server's idle and request timeouts move on by the wait),
 * and a client that goes away ends the wait at once, giving its slot back.
 */
async function untilBacklogRoom(ctx: Context, backlog: UploadCaps['backlog'], userName: string, unfinished: () => number): Promise<void> {
  const deadline = Date.now() + backlog.waitMs;
  await holdOpen(ctx, backlog.waitMs, async (gone) => {
    while (unfinished() >= backlog.perUser) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new DomainError('too_many', `you have ${unfinished()} unfinished tasks (MERIDIAN_UPLOAD_BACKLOG_PER_USER is ${backlog.perUser}) and none ended within ${backlog.waitMs} ms; retry later`);
      }
      await backlog.untilOneEnds(userName, left, gone);
      // A 4xx no one reads, rather than an error: the slot is given back, nothing was accepted.
      if (gone.aborted) throw new DomainError('too_many', 'the client went away while its upload waited for room in its backlog');
    }
  });
}

export function uploadRoutes(deps: UploadDeps): RouteDef[] {
  // Pushes under one Idempotency-Key, one at a time: a push's points are in the log once it is
  // written, so the second of two concurrent ones must find the first's task before it writes.
  const keyedPushes = new OneAtATime();
  const common = (user: UserRecord, idempotency: string | undefined) => ({ user_name: user.user_name, at: Date.now(), idempotency_key: idempotency ?? null });
  /**
   * Runs an upload under the user's caps, checked before its body is read: a new task past the
   * unfinished-tasks cap (a retry of a task that exists is no new task), or one more body than
   * the in-flight cap, is refused with 429; a new task while the user's backlog is full waits for
   * one of their tasks to end (untilBacklogRoom). The slot is held until the handler is done.
   */
  const capped = async (ctx: Context, user: UserRecord, taskId: string, receive: () => Promise<void>, waitsInBacklog = true) => {
    if (!deps.caps) return receive();
    const release = await admit(ctx, deps.caps, user, taskId, waitsInBacklog);
    try {
      await receive();
    } finally {
      release();
    }
  };
  /**
   * Writes the command of staged bytes. They go again when the log refused it for good (not
   * after a 503: see mayDiscard), and when the task exists already (a retry: the first
   * attempt's bytes serve it).
   */
  const submitStaged = async (taskId: string, command: UploadCommand & { readonly staged_object: string }) => {
    const outcome = await submitUpload(deps.submit, taskId, command).catch(async (e: unknown) => {
      if (mayDiscard(e)) await discard(deps.storage, command.staged_object);
      throw e;
    });
    if (outcome === 'repeated') await discard(deps.storage, command.staged_object);
    return outcome;
  };
  const admit = async (ctx: Context, caps: UploadCaps, user: UserRecord, taskId: string, waitsInBacklog: boolean) => {
    // A refusal here comes before the body is read: problemMiddleware closes the connection.
    // Only a user at the cap (or at the backlog) pays for the lookup of the task (memory, else
    // the read model), once: a retry of a task that exists is no new task.
    let found: Promise<boolean> | undefined;
    const exists = () => (found ??= deps.submit.find(taskId).then((task) => task !== undefined, () => false));
    const unfinished = () => caps.unfinished().get(user.user_name) ?? 0;
    try {
      assertTaskRoom(caps.unfinished(), user.user_name, caps.queuedTasks);
    } catch (refusal) {
      if (!(await exists())) throw refusal;
    }
    // The slot first: the uploads one user has waiting for room are bounded by it too.
    const release = caps.inFlight.acquire(user.user_name);
    try {
      if (waitsInBacklog && unfinished() >= caps.backlog.perUser && !(await exists())) await untilBacklogRoom(ctx, caps.backlog, user.user_name, unfinished);
    } catch (refusal) {
      release();
      throw refusal;
    }
    return release;
  };

  return [
    defineRoute({
      method: 'POST',
      path: '/api/v1/metrics/upload',
      operationId: 'uploadMetricsJson',
      summary: 'Upload metric values as JSON (background task)',
      description: 'The body is JSON, sent as application/json or — as the seed\'s sample request does — declared multipart/form-data with the JSON text as the body. A body of at most MERIDIAN_PUSH_MAX_BYTES (1 MiB) is a push: every value is validated here, an invalid row (on_error=fail) is answered 400 naming the rows and nothing is stored, and 202 comes once its points and task are durably in the event log; past MERIDIAN_PUSH_MAX_LAG_POINTS points not yet stored, 429. A larger body is staged: its shape is checked here, every value by the task (all or nothing unless on_error=skip), and 202 comes once the command is durably in the event log. ' + BACKLOG_DOC + ' (Staged uploads only: a push waits in no backlog.)',
      tags: ['metrics'],
      auth: 'user',
      query: z.object({ on_error: onError }),
      headers: uploadHeaders,
      requestBodyDoc: { contentTypes: { 'application/json': jsonUploadBody, 'multipart/form-data': jsonUploadBody } },
      responses: { 202: { description: 'Accepted; follow the task', schema: taskAccepted, example: { task_id: '4a3c6f8e-0f5e-4d1a-9a53-3c1f0e9b2d7a' } } },
      problems: ['validation', 'forbidden', 'payload_too_large', 'conflict', 'too_many', 'unavailable'],
      streaming: true,
      handler: async (ctx, { query, headers, user }) => {
        const idempotency = headers['idempotency-key'];
        assertMayUpload(user);
        const taskId = taskIdFor(user.user_name, idempotency ?? null);
        const push = deps.push;
        // A push waits in no backlog: it queues nothing in front of the ingest worker (its bound is the projector's lag).
        const declared = ctx.get('Content-Length');
        const likelyPush = push !== undefined && declared !== '' && Number(declared) <= push.maxBytes;
        await capped(ctx, user, taskId, async () => {
          const text = await jsonUploadText(await readBody(ctx.req, deps.limits.jsonBodyBytes), ctx.get('Content-Type'));
          const at = Date.now();
          const pushRequest = push !== undefined && text.length <= push.maxBytes
            ? { task_id: taskId, at, on_error: query.on_error, user, pointsPartitions: await pointsPartitions(push), ...push.parse }
            : undefined;
          // Parsed and hashed on a worker thread: a 16 MiB body must not hold every other request.
          const { body: raw, sha256, check, decision } = await deps.jsonChecker.check(text, pushRequest);
          if (check.kind === 'invalid') throw validationError(check.message, check.errors);
          if (check.kind === 'too_many_values') {
            throw new DomainError('payload_too_large', `at most ${deps.limits.pointsPerJsonUpload} values per JSON upload; send larger sets as a file to /api/v1/metrics_file_upload`);
          }
          assertWritable(user, check.metric_name, 'body.metric_name');
          if (push !== undefined && decision !== null) {
            const pushed = { task_id: taskId, user_name: user.user_name, at, metric_name: check.metric_name, on_error: query.on_error, source: 'json_body', payload_bytes: raw.length, payload_sha256: sha256, idempotency_key: idempotency ?? null };
            const outcome = idempotency === undefined ? await submitPush(deps.submit, push, pushed, decision) : await keyedPushes.run(taskId, () => submitPush(deps.submit, push, pushed, decision));
            if (outcome === 'written') deps.metrics?.uploadAccepted('json_body', raw.length, check.values);
            accepted(ctx, taskId);
            return;
          }
          // Staged like a file: the command carries only the reference, so reading the tasks log stays cheap.
          const stagedKey = stagedUploadKey(taskId);
          await stageBytes(deps.storage, stagedKey, raw);
          const command = {
            ...common(user, idempotency),
            metric_name: check.metric_name,
            on_error: query.on_error,
            source: 'json_body',
            payload: null,
            staged_object: stagedKey,
            payload_bytes: raw.length,
            payload_sha256: sha256,
          } satisfies UploadCommand;
          const outcome = await submitStaged(taskId, command);
          if (outcome === 'written') deps.metrics?.uploadAccepted('json_body', raw.length, check.values);
          accepted(ctx, taskId);
        }, !likelyPush);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/api/v1/metrics_file_upload',
      operationId: 'uploadMetricsFile',
      summary: 'Upload metric points from a file (background task)',
      description: [
        'The form field `file` holds the file (any other body is taken as the file itself); it is streamed to storage, never held in memory, and may be gzip-compressed.',
        'Layouts, detected from the content: CSV `timestamp,value` with or without that header; the download layout `metric_name,timestamp,metric_numeric_value,updated_at` (then metric_name may be omitted and each row names its metric); JSON `{"metric_name", "values": [...]}` or an array of `{timestamp, value}`; NDJSON of `{timestamp, value}`.',
        BACKLOG_DOC,
      ].join(' '),
      tags: ['metrics'],
      auth: 'user',
      query: z.object({
        metric_name: z.string().optional().describe('URL-encoded metric name; required unless the file names each row\'s metric'),
        on_error: onError,
      }),
      headers: uploadHeaders,
      requestBodyDoc: { contentTypes: { 'multipart/form-data': z.object({ file: z.string().describe('the file (binary)') }) } },
      responses: { 202: { description: 'Accepted; follow the task', schema: taskAccepted } },
      problems: ['forbidden', 'payload_too_large', 'conflict', 'too_many', 'unavailable'],
      streaming: true,
      handler: async (ctx, { query, headers, user }) => {
        const idempotency = headers['idempotency-key'];
        assertMayUpload(user);
        if (query.metric_name !== undefined) assertWritable(user, query.metric_name, 'query.metric_name');
        const taskId = taskIdFor(user.user_name, idempotency ?? null);
        await capped(ctx, user, taskId, async () => {
          const limit: FileLimit = { bytes: deps.limits.uploadBytes, tooLarge: () => tooLarge(deps.limits.uploadBytes, 'the file') };
          assertDeclaredSize(ctx.req, limit);
          const key = stagedUploadKey(taskId);
          const staged = isMultipart(ctx.req) ? await stageForm(ctx.req, deps.storage, key, 'the upload', () => limit) : await stageBody(ctx.req, deps.storage, key, 'the upload', limit);
          // An empty file stages nothing (stageForm, stageBody): refused without a command.
          if (staged.bytes === 0) throw validationError('the file is empty', [{ field: 'file', reason: 'empty' }]);
          const command = {
            ...common(user, idempotency),
            metric_name: query.metric_name ?? null,
            on_error: query.on_error,
            source: 'file',
            payload: null,
            staged_object: staged.objectKey,
            payload_bytes: staged.bytes,
            payload_sha256: staged.sha256,
          } satisfies UploadCommand;
          const outcome = await submitStaged(taskId, command);
          if (outcome === 'written') deps.metrics?.uploadAccepted('file', staged.bytes);
          accepted(ctx, taskId);
        });
      },
    }),
  ];
}

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
async function submitUpload(deps: SubmitDeps, task_id: string, command: UploadCommand): Promise<'written' | 'repeated'> {
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

async function pointsPartitions(push: PushDeps): Promise<number> {
  try {
    return await push.pointsPartitions();
  } catch (cause) {
    throw new DomainError('unavailable', 'the event log is not reachable; the upload was not accepted, retry later with the same Idempotency-Key', [], { cause });
  }
}

