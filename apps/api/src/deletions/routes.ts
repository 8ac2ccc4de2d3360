import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  assertTaskRoom,
  DomainError,
  MAX_DELETION_NAME_BYTES,
  nameRuns,
  parseDeletionRequest,
  PATTERNS,
  resolveDeletionNames,
  type MetricsDeleted,
  type Position,
  type RawDownloadQuery,
  type UnfinishedTasks,
  type UserRecord,
} from '@meridian/domain';
import { patternEntries, type MetricCatalog } from '../catalog/routes.ts';
import { defineRoute, type RouteDef } from '../http/route.ts';

/**
 * catalog: where the selection finds its metrics; count: the points a selection holds now;
 * append: the deletion into the log (deletion-log.ts); applied: the tasks fold has reached a position.
 */
export type DeletionDeps = {
  readonly catalog: MetricCatalog;
  /** MERIDIAN_MAX_DOWNLOAD_NAMES: the names of a list, as for a download. */
  readonly maxListNames: number;
  /** MERIDIAN_DELETE_MAX_POINTS. */
  readonly maxPoints: number;
  readonly count: (metrics: readonly string[], fromMs: number, toMs: number) => Promise<number>;
  readonly append: (deletion: Omit<MetricsDeleted, 'type' | 'partitions'>) => Promise<Position>;
  readonly applied: (position: Position) => Promise<void>;
  /** The user's unfinished tasks, deletions included, and their cap (MERIDIAN_MAX_QUEUED_TASKS_PER_USER): a deletion is a task like an upload. */
  readonly tasks: { readonly unfinished: () => UnfinishedTasks; readonly max: number };
};

export const DELETE_PATH = '/api/v1/metrics/delete';

const deleteBody = z.object({
  metrics: z
    .union([
      z.string().min(1),
      z
        .array(
          z
            .string()
            .min(1)
            .regex(/^[^,]*$/, 'a name holding a comma cannot be part of a list; select it with pattern single'),
        )
        .min(1),
    ])
    .describe('As in a download: a metric name, a comma-separated list (pattern list), an array of exact names, or the text a substring pattern applies to'),
  pattern: z
    .enum(PATTERNS as [string, ...string[]])
    .optional()
    .describe('single (default), list, contains, starts_with or ends_with, as in a download; a substring pattern reaches the metrics you may write'),
  start_date: z.string().describe('Inclusive, required. YYYY-MM-DD (from 00:00:00 UTC) or an ISO 8601 date-time with an offset'),
  end_date: z.string().describe('Inclusive, required. YYYY-MM-DD (to the end of that UTC day) or an ISO 8601 date-time with an offset'),
  reason: z.string().describe('Why, kept in the log with who asked and when (at most 1000 characters)'),
});

const accepted = z.object({
  task_id: z.uuid(),
  metrics: z.array(z.string()).describe('the metrics the selection reached'),
  points_selected: z.number().int().describe('points selected when the deletion was accepted'),
});

const DESCRIPTION = [
  'Deletes the points of the selected metrics with a timestamp in [start_date, end_date], as an event in the log (who, when, the selection, the reason).',
  "Allowed to the metrics' writers (rw) and admins: a name that does not exist or that you may not read is 404, as for a download; one you may read and not write is 403.",
  'Answers 202 with a task: it succeeds once the points are gone from downloads, the Prometheus API and the catalog (counts, first and last timestamps).',
  'Points accepted after the deletion are kept, in the range or not: the deletion applies to what was in the log before it.',
  'A deletion is a task like an upload: past MERIDIAN_MAX_QUEUED_TASKS_PER_USER unfinished tasks the answer is 429.',
  'A selection of more than MERIDIAN_DELETE_MAX_POINTS points, or of metrics whose names add up to more than 256 KiB, is refused (400): delete a narrower range or fewer metrics.',
].join(' ');

/**
 * The selection a deletion request reaches, checked against every bound before anything is
 * appended: the request's form, the user's task room, the names' size and the points' count.
 */
async function selectDeletion(deps: DeletionDeps, body: z.infer<typeof deleteBody>, user: UserRecord) {
  if (Array.isArray(body.metrics) && body.pattern !== undefined && body.pattern !== 'list') {
    throw new DomainError('validation', 'metrics is an array of names: pattern must be list or left out', [
      { field: 'body.pattern', reason: 'must be list when metrics is an array' },
    ]);
  }
  const raw: RawDownloadQuery = {
    ...body,
    metrics: Array.isArray(body.metrics) ? body.metrics.join(',') : body.metrics,
    ...(Array.isArray(body.metrics) ? { pattern: 'list' } : {}),
  };
  const request = parseDeletionRequest(raw, deps.maxListNames);
  assertTaskRoom(deps.tasks.unfinished(), user.user_name, deps.tasks.max);
  const catalog = await patternEntries(deps.catalog, request.pattern, request.metrics);
  const metrics = resolveDeletionNames(
    request,
    catalog.map((c) => c.metric_name),
    user,
  );
  if (nameRuns(metrics, MAX_DELETION_NAME_BYTES).length > 1) {
    throw new DomainError(
      'validation',
      `the selection reaches metrics whose names add up to more than ${MAX_DELETION_NAME_BYTES} bytes, more than one deletion carries: split it`,
      [{ field: 'metrics', reason: `names past ${MAX_DELETION_NAME_BYTES} bytes` }],
    );
  }
  const points = await deps.count(metrics, request.fromMs, request.toMs).catch((cause: unknown) => {
    throw new DomainError('unavailable', 'the metric store did not answer; retry later', [], { cause });
  });
  if (points > deps.maxPoints) {
    throw new DomainError(
      'validation',
      `the selection holds ${points} points, more than one deletion may select (MERIDIAN_DELETE_MAX_POINTS, ${deps.maxPoints}): delete a narrower range or fewer metrics`,
      [{ field: 'end_date', reason: `selects ${points} points, at most ${deps.maxPoints}` }],
    );
  }
  return { request, metrics, points };
}

export function deletionRoutes(deps: DeletionDeps): RouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      path: DELETE_PATH,
      operationId: 'deleteMetricPoints',
      summary: 'Delete a range of points (background task)',
      description: DESCRIPTION,
      tags: ['metrics'],
      auth: 'user',
      body: deleteBody,
      responses: {
        202: {
          description: 'Accepted; follow the task (Location header)',
          schema: accepted,
          example: { task_id: '4a3c6f8e-0f5e-4d1a-9a53-3c1f0e9b2d7a', metrics: ['cpu:load'], points_selected: 1440 },
        },
      },
      problems: ['validation', 'forbidden', 'not_found', 'too_many', 'unavailable'],
      handler: async (ctx, { body, user }) => {
        const { request, metrics, points } = await selectDeletion(deps, body, user);
        const taskId = randomUUID();
        const position = await deps
          .append({
            task_id: taskId,
            user_name: user.user_name,
            at: Date.now(),
            reason: request.reason,
            pattern: request.pattern,
            selection: request.metrics,
            from_ms: request.fromMs,
            to_ms: request.toMs,
            metrics,
            points,
          })
          .catch((cause: unknown) => {
            throw new DomainError(
              'unavailable',
              'the event log did not confirm the deletion: see GET /api/v1/tasks before asking again (asked again, it also deletes the points accepted in between)',
              [],
              { cause },
            );
          });
        // In the log now: a fold that lags does not undo it; the task may read as 404 for a moment.
        await deps.applied(position).catch(() => undefined);
        ctx.status = 202;
        ctx.set('Location', `/api/v1/tasks/${taskId}`);
        ctx.body = { task_id: taskId, metrics, points_selected: points };
      },
    }),
  ];
}
