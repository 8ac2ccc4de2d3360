import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import { z } from 'zod';
import { DomainError, parseDateBound, validationError, type FieldError } from '@meridian/domain';
import { decodeExportCursor, encodeExportCursor, ExportRequestError, type ExportPlan, type ExportRequest } from '@meridian/export';
import type { CursorSeal } from '../http/cursor-seal.ts';
import { holdWhileResponding, type PerUserSlots } from '../http/per-user-slots.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';

export type EventsDeps = {
  plan(request: ExportRequest): Promise<ExportPlan>;
  stream(plan: ExportPlan, request: ExportRequest, signal: AbortSignal): Readable;
  /** Largest max_events (MERIDIAN_MAX_ROWS_CEILING, as downloads). */
  readonly maxEventsCeiling: number;
  readonly cursors: CursorSeal;
  /** The per-user cap on downloads streaming at once (shared with metric downloads). */
  readonly streams?: PerUserSlots;
};

const DEFAULT_MAX_EVENTS = 100_000;

const query = z.object({
  from: z
    .string()
    .optional()
    .describe(
      'Inclusive, on the Kafka record timestamp (when the event was written). YYYY-MM-DD (from 00:00:00 UTC) or an ISO 8601 date-time with an offset. Default: the beginning of the log',
    ),
  to: z.string().optional().describe('Inclusive. YYYY-MM-DD (to the end of that UTC day) or an ISO 8601 date-time with an offset. Default: now'),
  types: z.string().optional().describe('Comma-separated event types (the schema names in schemas/, e.g. UserCreated,PointBatch). Default: all'),
  format: z
    .enum(['avro', 'ndjson'])
    .optional()
    .describe('avro (default): an Avro object container file, readable by any Avro tool; ndjson: one JSON object per line'),
  max_events: z
    .string()
    .optional()
    .describe(
      `Most log offsets one page covers (default ${DEFAULT_MAX_EVENTS}; at most the configured ceiling). Markers of transactions and events of other types or times take offsets too, so a page may hold fewer events. When the range goes on: X-Next-Cursor and Link rel="next"`,
    ),
  cursor: z.string().optional().describe('The opaque X-Next-Cursor of the previous page'),
});

type Query = z.infer<typeof query>;

/** What an events cursor continues: the caller and the range and types it pages through. */
function cursorContext(userName: string, fromMs: number | null, toMs: number | null, types: readonly string[] | null): unknown[] {
  return ['events', userName, fromMs, toMs, types];
}

function parse(q: Query, ceiling: number, cursors: CursorSeal, userName: string): ExportRequest {
  const errors: FieldError[] = [];
  const time = (text: string | undefined, field: 'from' | 'to') => {
    if (text === undefined) return null;
    const parsed = parseDateBound(text, field === 'from' ? 'start' : 'end');
    if (!parsed.ok) {
      errors.push({ field, reason: parsed.reason });
      return null;
    }
    return parsed.ms;
  };
  const fromMs = time(q.from, 'from');
  const toMs = time(q.to, 'to');
  if (fromMs !== null && toMs !== null && fromMs > toMs) errors.push({ field: 'from', reason: 'after to' });
  let maxEvents = DEFAULT_MAX_EVENTS;
  if (q.max_events !== undefined) {
    maxEvents = /^\d{1,12}$/.test(q.max_events) ? Number(q.max_events) : NaN;
    if (!(maxEvents >= 1 && maxEvents <= ceiling)) errors.push({ field: 'max_events', reason: `an integer from 1 to at most ${ceiling}` });
  }
  const types =
    q.types === undefined
      ? null
      : q.types
          .split(',')
          .map((t) => t.trim())
          .filter((t) => t.length > 0);
  const sealed = q.cursor === undefined ? null : cursors.open(q.cursor, cursorContext(userName, fromMs, toMs, types));
  const after = sealed === null ? null : decodeExportCursor(sealed);
  if (q.cursor !== undefined && after === null) errors.push({ field: 'cursor', reason: 'not a cursor this service issued for this range' });
  if (types !== null && types.length === 0) errors.push({ field: 'types', reason: 'no event type given' });
  if (errors.length > 0) throw validationError(`invalid request: ${errors.map((e) => `${e.field} ${e.reason}`).join('; ')}`, errors);
  return { fromMs, toMs, types, format: q.format ?? 'avro', maxEvents, after };
}

function nextLink(ctx: Context, cursor: string): string {
  const url = new URL(ctx.originalUrl, 'http://x');
  url.searchParams.set('cursor', cursor);
  return `${url.pathname}${url.search}`;
}

/**
 * GET /api/v1/events: the raw event history, for data engineers' own tools. Admins only; to
 * anyone else the route does not exist (404, the same problem as an unknown path).
 */
export function eventsRoute(deps: EventsDeps): RouteDef {
  return defineRoute({
    method: 'GET',
    path: '/api/v1/events',
    operationId: 'exportEvents',
    summary: 'Export the raw event history of a time range (admin)',
    description: [
      'Streams every event of the log (accounts, tasks, files and points topics) whose Kafka record timestamp is in [from, to], in log order: topic by topic, partition by partition, offset by offset.',
      'avro: one Avro object container file (deflate) whose schema is a record meridian.export.LoggedEvent {topic, partition, offset, timestamp, key, type, schema_version, event} with event a union of the newest schema of each exported type; events written with older versions are resolved into the newest (schema_version says which wrote them).',
      'ndjson: the same fields as JSON, bytes and fixed as lowercase hex, timestamp as ISO 8601.',
      'Pages and cursors work like metric downloads: X-Next-Cursor and Link rel="next" when the range goes on.',
      'Callers who are not admins get 404.',
    ].join(' '),
    tags: ['events'],
    auth: 'user',
    streaming: true,
    query,
    responses: {
      200: {
        description: 'The events. Headers: Content-Disposition attachment; X-Next-Cursor and Link rel="next" when the range goes on.',
        contentType: 'application/avro',
        schema: z.string(),
        headers: {
          'X-Next-Cursor': { description: 'Opaque: pass as cursor to get the next page', schema: z.string() },
          Link: { description: '<same query with cursor>; rel="next"', schema: z.string() },
        },
      },
    },
    problems: ['not_found', 'too_many', 'unavailable'],
    handler: async (ctx, { user, query: q }) => {
      // Least privilege: to a non-admin this route is indistinguishable from one that does not exist.
      if (!user.is_admin) throw new DomainError('not_found', `no route for ${ctx.method} ${ctx.path}`);
      if (deps.streams) holdWhileResponding(ctx, deps.streams, user.user_name);
      const request = parse(q, deps.maxEventsCeiling, deps.cursors, user.user_name);
      let plan: ExportPlan;
      try {
        plan = await deps.plan(request);
      } catch (error) {
        if (error instanceof ExportRequestError) throw validationError(error.message, [{ field: error.field, reason: error.message }]);
        throw new DomainError('unavailable', 'the event log did not answer; retry later', [], { cause: error });
      }
      if (plan.next) {
        const token = deps.cursors.seal(encodeExportCursor(plan.next), cursorContext(user.user_name, request.fromMs, request.toMs, request.types));
        ctx.set('X-Next-Cursor', token);
        ctx.set('Link', `<${nextLink(ctx, token)}>; rel="next"`);
      }
      ctx.set('Content-Disposition', `attachment; filename="events.${request.format}"`);
      ctx.type = request.format === 'avro' ? 'application/avro' : 'application/x-ndjson; charset=utf-8';
      if (ctx.method === 'HEAD') {
        ctx.status = 200; // the headers only: no read of the log
        return;
      }
      const abort = new AbortController();
      const onClose = () => {
        if (!ctx.res.writableFinished) abort.abort(new Error('client disconnected'));
      };
      ctx.req.on('close', onClose);
      ctx.res.on('close', onClose);
      ctx.body = deps.stream(plan, request, abort.signal);
    },
  });
}
