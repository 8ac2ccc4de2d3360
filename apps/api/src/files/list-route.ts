import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { FileDeps } from './deps.ts';
import { definitionsInFlight } from './quota.ts';
import { fileEntry, fileEntrySchema } from './views.ts';

/** GET /api/v1/files: the caller's files and those shared with them, a page at a time. */
export function listFilesRoute(deps: Pick<FileDeps, 'files' | 'tasks'>): RouteDef {
  return defineRoute({
    method: 'GET',
    path: '/api/v1/files',
    operationId: 'listFiles',
    summary: 'The files the caller may see',
    description:
      "The caller's own files and those shared with them (an admin sees every file), newest first. A file appears once its definition task has succeeded. Pages of `limit` files; `next_cursor` (null on the last page) fetches the next one.",
    tags: ['files'],
    auth: 'user',
    query: z.object({
      name_contains: z.string().min(1).max(255).optional().describe('only files whose name contains this text, ignoring case'),
      limit: z.coerce.number().int().min(1).max(1000).default(1000),
      cursor: z
        .string()
        .regex(/^\d{1,15}$/, 'a next_cursor from a previous page')
        .optional(),
    }),
    responses: {
      200: {
        description: 'Files',
        schema: z.object({ files_list: z.array(fileEntrySchema), next_cursor: z.string().nullable() }),
        example: {
          files_list: [
            {
              created_at: '2024-01-02T03:04:05+0000',
              entitlement: 'rw',
              file_description: 'daily export',
              file_id: '0d7c3e2a-5b6f-4e1d-8c9a-1f2e3d4c5b6a',
              file_name: 'export.csv',
              user_name: 'ada',
            },
          ],
          next_cursor: null,
        },
      },
    },
    handler: async (ctx, { query, user }) => {
      // A definition of the caller that succeeded may not be projected yet: wait (bounded) for the projection first.
      if (definitionsInFlight(deps.tasks(), user.user_name).some((d) => d.succeeded)) await deps.files.current();
      const page = await deps.files.list(user, {
        name_contains: query.name_contains,
        limit: query.limit,
        cursor: query.cursor === undefined ? undefined : Number(query.cursor),
      });
      ctx.body = {
        files_list: page.files.map(({ file, access }) => fileEntry(file, access)),
        next_cursor: page.next_cursor === null ? null : String(page.next_cursor),
      };
    },
  });
}
