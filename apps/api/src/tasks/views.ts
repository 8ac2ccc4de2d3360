import { z } from 'zod';
import { formatTimestamp, type Task } from '@meridian/domain';

const rowError = z.object({
  row: z.number().int().describe('1-based row (line for CSV/NDJSON, element for JSON); 0 for the upload as a whole; -1 counts errors not shown'),
  column: z.string(),
  reason: z.string(),
});

export const taskViewSchema = z.object({
  task_id: z.uuid(),
  kind: z.enum(['metrics_upload', 'file_definition', 'points_rebuild', 'points_deletion']),
  status: z
    .enum(['queued', 'running', 'succeeded', 'failed'])
    .describe('queued → running → succeeded | failed; succeeded only once every accepted point is queryable'),
  created_at: z.string(),
  updated_at: z.string(),
  progress: z.object({ rows_done: z.number().int(), rows_total: z.number().int().nullable() }),
  result: z
    .union([
      z.object({ points_accepted: z.number().int(), rows_rejected: z.number().int(), metrics: z.array(z.string()) }),
      z
        .object({ file_id: z.uuid(), size: z.number().int(), sha256: z.string() })
        .describe('file_definition: the file defined (GET /api/v1/file/download/{file_id})'),
      z
        .object({
          generation: z.number().int().nullable(),
          database: z.string(),
          table: z.string(),
          events: z.number().int(),
          points: z.number().int(),
          verified: z.boolean().nullable(),
          swapped: z.boolean(),
        })
        .describe(
          'points_rebuild (meridian replay rebuild): the generation and table written, what was read and written, the verification against the live table, whether it was swapped in',
        ),
      z
        .object({ points_selected: z.number().int(), metrics: z.array(z.string()) })
        .describe('points_deletion (POST /api/v1/metrics/delete): the metrics reached and the points selected when it was accepted'),
    ])
    .nullable(),
  errors: z.array(rowError).describe('at most the first 100, each with its row number'),
  reason: z.string().nullable().describe('why a failed task failed'),
});

export type TaskView = z.infer<typeof taskViewSchema>;

export function taskView(task: Task): TaskView {
  return {
    task_id: task.task_id,
    kind: task.kind,
    status: task.status,
    created_at: formatTimestamp(task.created_at),
    updated_at: formatTimestamp(task.updated_at),
    progress: { rows_done: task.rows_done, rows_total: task.rows_total },
    result:
      task.result === null
        ? null
        : task.result.file_id !== undefined
          ? { file_id: task.result.file_id, size: task.result.size, sha256: task.result.sha256 }
          : task.result.generation !== undefined
            ? {
                generation: task.result.generation,
                database: task.result.database,
                table: task.result.table,
                events: task.result.events,
                points: task.result.points,
                verified: task.result.verified,
                swapped: task.result.swapped,
              }
            : task.result.points_selected !== undefined
              ? { points_selected: task.result.points_selected, metrics: [...task.result.metrics] }
              : { points_accepted: task.result.points_accepted, rows_rejected: task.result.rows_rejected, metrics: [...task.result.metrics] },
    errors: [...task.errors],
    reason: task.reason,
  };
}
