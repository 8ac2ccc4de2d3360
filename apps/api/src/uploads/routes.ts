import type { Task } from '@meridian/domain';
import { z } from 'zod';
import type { BlobStore } from '../blob-store.ts';
import type { BodyBudget } from '../http/body-budget.ts';
import { OneAtATime } from '../http/one-at-a-time.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { ApiMetrics } from '../observability/metrics.ts';
import { BACKLOG_DOC, UploadAdmission, type UploadCaps } from './admission.ts';
import type { JsonUploadChecker } from './json-check-pool.ts';
import type { PushDeps, SubmitDeps } from './push-submit.ts';
import { receiveFileUpload, receiveJsonUpload, type Receivers, type UploadLimits } from './receive.ts';

// The upload routes as the OpenAPI document describes them; what each does is in receive.ts.

export type UploadDeps = {
  readonly submit: SubmitDeps;
  /** Absent: every upload is staged for the ingest worker. */
  readonly push?: PushDeps;
  readonly storage: BlobStore;
  readonly limits: UploadLimits;
  /** Parses and hashes JSON upload bodies off the event loop (uploads/json-check-pool.ts). */
  readonly jsonChecker: Pick<JsonUploadChecker, 'check'>;
  readonly caps?: UploadCaps;
  /** Bytes of bodies held whole on this instance, over every user (MERIDIAN_BODY_BYTES_IN_FLIGHT); absent: unbounded (the contract test's inert deps). */
  readonly bodies?: BodyBudget;
  readonly metrics?: Pick<ApiMetrics, 'uploadAccepted'>;
};

const taskAccepted = z.object({ task_id: z.uuid() });
const onError = z
  .enum(['fail', 'skip'])
  .default('fail')
  .describe('fail: one invalid row fails the whole upload and nothing is stored; skip: valid rows are stored and the rejected ones reported');
/** The optional Idempotency-Key header: a retry with the same key, parameters and body gets the same task. */
const uploadHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(/^[\x21-\x7e]{1,200}$/, 'must be 1 to 200 visible ASCII characters')
    .optional()
    .describe(
      'Idempotency-Key: a retry with the same key, parameters and body answers with the same task and stores nothing twice; anything else under the key → 409',
    ),
});

const jsonUploadBody = z.object({
  metric_name: z.string().describe('The metric all values belong to.'),
  values: z.array(
    z.object({
      timestamp: z.string().describe('YYYY-MM-DDTHH:MM:SS with an offset: +hhmm, -hhmm, +hh:mm or Z; fractional seconds up to milliseconds'),
      value: z.number().describe('A finite number'),
    }),
  ),
});

export function uploadRoutes(deps: UploadDeps): RouteDef[] {
  const r: Receivers = {
    submit: deps.submit,
    push: deps.push,
    storage: deps.storage,
    limits: deps.limits,
    jsonChecker: deps.jsonChecker,
    admission: new UploadAdmission(deps.caps, (taskId: string): Promise<Task | undefined> => deps.submit.find(taskId)),
    keyedPushes: new OneAtATime(),
    bodies: deps.bodies,
    metrics: deps.metrics,
  };
  return [
    defineRoute({
      method: 'POST',
      path: '/api/v1/metrics/upload',
      operationId: 'uploadMetricsJson',
      summary: 'Upload metric values as JSON (background task)',
      description:
        "The body is JSON, sent as application/json or — as the seed's sample request does — declared multipart/form-data with the JSON text as the body. A body of at most MERIDIAN_PUSH_MAX_BYTES (1 MiB) is a push: every value is validated here, an invalid row (on_error=fail) is answered 400 naming the rows and nothing is stored, and 202 comes once its points and task are durably in the event log; past MERIDIAN_PUSH_MAX_LAG_POINTS points not yet stored, 429. A larger body is staged: its shape is checked here, every value by the task (all or nothing unless on_error=skip), and 202 comes once the command is durably in the event log. " +
        BACKLOG_DOC +
        ' (Staged uploads only: a push waits in no backlog.)',
      tags: ['metrics'],
      auth: 'user',
      query: z.object({ on_error: onError }),
      headers: uploadHeaders,
      requestBodyDoc: { contentTypes: { 'application/json': jsonUploadBody, 'multipart/form-data': jsonUploadBody } },
      responses: { 202: { description: 'Accepted; follow the task', schema: taskAccepted, example: { task_id: '4a3c6f8e-0f5e-4d1a-9a53-3c1f0e9b2d7a' } } },
      problems: ['validation', 'forbidden', 'payload_too_large', 'conflict', 'too_many', 'unavailable'],
      streaming: true,
      handler: (ctx, { query, headers, user }) => receiveJsonUpload(r, ctx, { user, on_error: query.on_error, idempotency: headers['idempotency-key'] }),
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
        metric_name: z.string().optional().describe("URL-encoded metric name; required unless the file names each row's metric"),
        on_error: onError,
      }),
      headers: uploadHeaders,
      requestBodyDoc: { contentTypes: { 'multipart/form-data': z.object({ file: z.string().describe('the file (binary)') }) } },
      responses: { 202: { description: 'Accepted; follow the task', schema: taskAccepted } },
      problems: ['forbidden', 'payload_too_large', 'conflict', 'too_many', 'unavailable'],
      streaming: true,
      handler: (ctx, { query, headers, user }) =>
        receiveFileUpload(r, ctx, { user, on_error: query.on_error, idempotency: headers['idempotency-key'], metric_name: query.metric_name }),
    }),
  ];
}
