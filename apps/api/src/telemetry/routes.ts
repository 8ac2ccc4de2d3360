import { createHash, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import { DomainError, type PointsFact, type UserRecord } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { partitionFor } from '@meridian/kafka';
import {
  decodeInfluxLines,
  decodeOtlpMetrics,
  decodeRemoteWriteBody,
  gunzipBounded,
  otlpExportResponse,
  otlpPartialSuccess,
  parseInfluxPrecision,
  type DecodedPush,
  type ProtocolLimits,
  type Rejected,
  type SeriesNameCache,
} from '@meridian/protocols';
import { holdWhileResponding, type PerUserSlots } from '../http/per-user-slots.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { BodyBudget } from '../http/body-budget.ts';
import { releaseNow } from '../http/release-memory.ts';
import { readHeldBody } from '../uploads/read-body.ts';
import { submitPush, type PushDeps, type SubmitDeps } from '../uploads/push-submit.ts';
import { decideSeriesPush } from './series-push.ts';

// The standard telemetry protocols in, on the push path: Prometheus remote write, OTLP/HTTP
// metrics and Influx line protocol. Each route decodes its body into canonically named series
// (libs/protocols), the caller's access decides which are written, and the rest goes as a push
// does: one transaction shared with the pushes beside it, answered once durable.

export type TelemetryDeps = {
  readonly submit: SubmitDeps;
  readonly push: PushDeps;
  /** What one request may hold once decompressed, and in series and samples (MERIDIAN_PROTOCOL_*). */
  readonly limits: ProtocolLimits;
  /** Remote write's series names kept across requests, whoever sent them (a name is the labels' bytes' alone; MERIDIAN_PROTOCOL_NAME_CACHE_ENTRIES). */
  readonly names?: SeriesNameCache;
  /** Largest request body as sent, compressed or not (MERIDIAN_PUSH_MAX_BYTES). */
  readonly maxBodyBytes: number;
  readonly pointsCodec: EventCodec<PointsFact>;
  /** Bodies one user has in flight on this instance (MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER, shared with the uploads): 429 past it. */
  readonly inFlight?: PerUserSlots;
  /** Bytes of bodies held whole on this instance, over every user (MERIDIAN_BODY_BYTES_IN_FLIGHT): past it a request waits, then 503. */
  readonly bodies?: BodyBudget;
};

/** What the push stored, and what it refused (the decoder's refusals and the series the caller may not write). */
type Outcome = { readonly stored: number; readonly refused: readonly Rejected[]; readonly refusedPoints: number };

/** Writes the decoded series the caller may write as one push (nothing when there is none), and says what was refused. */
async function pushSeries(deps: TelemetryDeps, user: UserRecord, source: string, body: Buffer, decoded: DecodedPush): Promise<Outcome> {
  const taskId = randomUUID();
  const at = Date.now();
  const pointsPartitions = await deps.push.pointsPartitions().catch((cause: unknown) => {
    throw new DomainError('unavailable', 'the event log is not reachable; nothing was stored, retry later', [], { cause });
  });
  const { decision, refused, refusedPoints } = decideSeriesPush(decoded, user, {
    taskId,
    at,
    batch: deps.push.parse.batch,
    pointsPartitions,
    partitionOf: partitionFor,
    codec: deps.pointsCodec,
  });
  if (decision.points_accepted > 0) {
    const request = {
      task_id: taskId,
      user_name: user.user_name,
      at,
      metric_name: null,
      on_error: 'skip' as const,
      source,
      payload_bytes: body.length,
      payload_sha256: createHash('sha256').update(body).digest(),
      idempotency_key: null,
    };
    // The answer names no task (idempotency_key is null too): it waits for the commit alone.
    await submitPush(deps.submit, deps.push, request, decision, false);
  }
  return { stored: decision.points_accepted, refused, refusedPoints };
}

/** The first refusals in one line, for an answer's message. */
function refusalSummary(o: Outcome): string {
  const first = o.refused
    .slice(0, 3)
    .map((r) => `${r.where}: ${r.reason}`)
    .join('; ');
  return `${o.refusedPoints} of ${o.stored + o.refusedPoints} samples refused${first === '' ? '' : ` (${first}${o.refused.length > 3 ? '; ...' : ''})`}`;
}

/** The body once decompressed per its Content-Encoding (gzip, or none), within the decompressed bound. */
async function decompressed(ctx: Context, body: Buffer, limits: ProtocolLimits): Promise<Uint8Array> {
  const encoding = ctx.get('Content-Encoding').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return body;
  if (encoding === 'gzip') return gunzipBounded(body, limits.maxBytes);
  throw new DomainError('unsupported_media_type', `Content-Encoding ${encoding} is not read here: send gzip, or no encoding`);
}

const pushSummary = 'Answered once every written sample is durably in the event log; what the caller may not write is refused by series, and reported.';

// A request's body, decoded series and batches are held until it is answered: each holds one of the user's upload slots.
function holdSlot(deps: TelemetryDeps, ctx: Context, user: UserRecord): void {
  if (deps.inFlight) holdWhileResponding(ctx, deps.inFlight, user.user_name);
}

/** Prometheus remote write, 1.0 and 2.0. */
function remoteWriteRoute(deps: TelemetryDeps): RouteDef {
  return defineRoute({
    method: 'POST',
    path: '/api/v1/write',
    operationId: 'prometheusRemoteWrite',
    summary: 'Prometheus remote write (1.0, and 2.0 by its Content-Type)',
    description: `A snappy-compressed protobuf WriteRequest, as Prometheus' remote_write sends it. 204 when every sample is stored; 400 with the reasons in the body when some were refused (the rest are stored; Prometheus does not retry a 4xx); 413 past the request's bounds; 429 and 503 only for what a retry can cure. Stale markers are dropped, not stored. ${pushSummary}`,
    tags: ['telemetry'],
    auth: 'user',
    // Read whatever its Content-Type says (only the 2.0 parameter is looked at): Prometheus sends x-protobuf.
    requestBodyDoc: {
      contentTypes: {
        'application/x-protobuf': z.string().describe('snappy-compressed WriteRequest'),
        'application/octet-stream': z.string().describe('the same bytes, however labelled'),
      },
    },
    responses: {
      204: { description: 'Every sample stored' },
      400: { description: 'Some samples refused (the rest stored), or the body is malformed', contentType: 'text/plain' },
    },
    problems: ['validation', 'payload_too_large', 'too_many', 'unavailable'],
    streaming: true,
    handler: async (ctx, { user }) => {
      holdSlot(deps, ctx, user);
      const body = await readHeldBody(ctx, deps.maxBodyBytes, deps.bodies, user.user_name);
      const version = /proto=io\.prometheus\.write\.v2\.Request/i.test(ctx.get('Content-Type')) ? '2.0' : '1.0';
      let outcome: Outcome;
      try {
        outcome = await pushSeries(deps, user, 'remote_write', body, decodeRemoteWriteBody(body, version, { ...deps.limits, names: deps.names }));
      } finally {
        releaseNow([body]); // snappy-compressed: what was decoded from it was copied out of it
      }
      ctx.set('X-Prometheus-Remote-Write-Samples-Written', String(outcome.stored));
      if (outcome.refusedPoints === 0) {
        ctx.status = 204;
        return;
      }
      ctx.status = 400;
      ctx.type = 'text/plain';
      ctx.body = `${refusalSummary(outcome)}\n`;
    },
  });
}

/** OTLP/HTTP metrics, at one of its paths. */
function otlpRoute(deps: TelemetryDeps, path: string, operationId: string): RouteDef {
  return defineRoute({
    method: 'POST',
    path,
    operationId,
    summary: 'OpenTelemetry OTLP/HTTP metrics (protobuf or JSON, gzip)',
    description: `An ExportMetricsServiceRequest as application/x-protobuf or application/json, gzip or not. Gauges, sums (a monotonic cumulative sum is named with _total; a delta sum is stored as sent), histograms (_bucket{le}, _sum, _count) and summaries (quantiles, _sum, _count). 200 with partial_success naming the refused data points when some were refused (the rest are stored). ${pushSummary}`,
    tags: ['telemetry'],
    auth: 'user',
    requestBodyDoc: {
      contentTypes: {
        'application/x-protobuf': z.string().describe('ExportMetricsServiceRequest'),
        'application/json': z.object({ resourceMetrics: z.array(z.unknown()) }),
      },
    },
    responses: { 200: { description: "ExportMetricsServiceResponse, in the request's encoding" } },
    problems: ['validation', 'payload_too_large', 'unsupported_media_type', 'too_many', 'unavailable'],
    streaming: true,
    handler: async (ctx, { user }) => {
      const type = ctx.get('Content-Type').toLowerCase();
      const format = type.startsWith('application/json')
        ? 'json'
        : type.startsWith('application/x-protobuf') || type.startsWith('application/protobuf')
          ? 'protobuf'
          : null;
      if (format === null) throw new DomainError('unsupported_media_type', 'send OTLP as application/x-protobuf or application/json');
      holdSlot(deps, ctx, user);
      const body = await readHeldBody(ctx, deps.maxBodyBytes, deps.bodies, user.user_name);
      const decoded = decodeOtlpMetrics(await decompressed(ctx, body, deps.limits), format, deps.limits);
      const outcome = await pushSeries(deps, user, 'otlp', body, decoded);
      const decoderPartial = otlpPartialSuccess(decoded);
      // The decoder counts OTLP data points it refused; series the caller may not write add their samples.
      const accessRefused = outcome.refusedPoints - decoded.rejectedPoints;
      const rejected = (decoderPartial?.rejectedDataPoints ?? 0) + accessRefused;
      const partial = rejected === 0 ? null : { rejectedDataPoints: rejected, errorMessage: refusalSummary(outcome) };
      ctx.status = 200;
      ctx.type = format === 'json' ? 'application/json' : 'application/x-protobuf';
      const answer = otlpExportResponse(partial, format);
      ctx.body = typeof answer === 'string' ? answer : Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength);
    },
  });
}

/** Influx line protocol, as InfluxDB 1.x or 2.x takes it. */
function influxRoute(deps: TelemetryDeps, path: string, operationId: string, version: 'v1' | 'v2'): RouteDef {
  return defineRoute({
    method: 'POST',
    path,
    operationId,
    summary: `Influx line protocol (${version === 'v1' ? 'InfluxDB 1.x /write' : 'InfluxDB 2.x /api/v2/write'})`,
    description: `Line protocol, gzip or not; ${version === 'v1' ? '`db` and `rp` are accepted and not used (access decides what a caller may write); `precision` n, u, ms, s, m or h' : '`org` and `bucket` are accepted and not used (access decides what a caller may write); `precision` ns, us, ms or s'} (default ns). A series is named measurement_field{tag="value",...}. 204 when every line is stored; 400 with Influx's error body naming the first refused line when some were refused (the rest are stored). ${pushSummary}`,
    tags: ['telemetry'],
    auth: 'user',
    query: z.object({
      precision: z.string().optional(),
      db: z.string().optional(),
      rp: z.string().optional(),
      org: z.string().optional(),
      bucket: z.string().optional(),
      orgID: z.string().optional(),
    }),
    requestBodyDoc: { contentTypes: { 'text/plain': z.string().describe('line protocol') } },
    responses: {
      204: { description: 'Every line stored' },
      400: {
        description: 'Some lines refused (the rest stored)',
        schema: z.object({ code: z.string().optional(), message: z.string().optional(), error: z.string().optional() }),
      },
    },
    problems: ['validation', 'payload_too_large', 'unsupported_media_type', 'too_many', 'unavailable'],
    streaming: true,
    handler: async (ctx, { user, query }) => {
      const precision = parseInfluxPrecision(query.precision);
      if (precision === null)
        throw new DomainError('validation', `precision ${JSON.stringify(query.precision)} is not one of ns, us, ms, s (v1 also n, u, m, h)`, [
          { field: 'query.precision', reason: 'unknown precision' },
        ]);
      holdSlot(deps, ctx, user);
      const body = await readHeldBody(ctx, deps.maxBodyBytes, deps.bodies, user.user_name);
      const decoded = decodeInfluxLines(await decompressed(ctx, body, deps.limits), { ...deps.limits, precision, receivedAtMs: Date.now() });
      const outcome = await pushSeries(deps, user, 'influx', body, decoded);
      if (outcome.refusedPoints === 0) {
        ctx.status = 204;
        return;
      }
      const message = `partial write: ${refusalSummary(outcome)}`;
      ctx.status = 400;
      ctx.body = version === 'v1' ? { error: message } : { code: 'invalid', message };
    },
  });
}

export function telemetryRoutes(deps: TelemetryDeps): RouteDef[] {
  return [
    remoteWriteRoute(deps),
    otlpRoute(deps, '/v1/metrics', 'otlpMetrics'),
    otlpRoute(deps, '/api/v1/otlp/v1/metrics', 'otlpMetricsUnderApi'),
    influxRoute(deps, '/write', 'influxWriteV1', 'v1'),
    influxRoute(deps, '/api/v2/write', 'influxWriteV2', 'v2'),
  ];
}
