import { z } from 'zod';
import { decideDeleteFile, decideDescribeFile, visibleFile } from '@meridian/domain';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { FileCatalog } from './catalog.ts';
import { fileIdParam, findFile } from './lookup.ts';
import { fileDetail, fileDetailSchema } from './views.ts';

/** GET /api/v1/files/{file_id}: one file's entry. */
export function getFileRoute(files: FileCatalog): RouteDef {
  return defineRoute({
    method: 'GET',
    path: '/api/v1/files/{file_id}',
    operationId: 'getFile',
    summary: "One file's entry, with its size, hash, type and (for its owner) who it is shared with",
    tags: ['files'],
    auth: 'user',
    params: fileIdParam,
    responses: { 200: { description: 'The file', schema: fileDetailSchema } },
    problems: ['not_found'],
    handler: async (ctx, { params, user }) => {
      const { file, access } = await findFile(files, params.file_id, user);
      ctx.body = fileDetail(file, access, user.is_admin || file.owner === user.user_name);
    },
  });
}

/** PATCH /api/v1/files/{file_id}: a new description. */
export function describeFileRoute(files: FileCatalog): RouteDef {
  return defineRoute({
    method: 'PATCH',
    path: '/api/v1/files/{file_id}',
    operationId: 'describeFile',
    summary: "Replace a file's description (rw access)",
    tags: ['files'],
    auth: 'user',
    params: fileIdParam,
    body: z.object({ file_description: z.string().max(10_000) }),
    responses: { 200: { description: 'The file after the change', schema: fileDetailSchema } },
    problems: ['not_found', 'forbidden'],
    handler: async (ctx, { params, body, user }) => {
      await findFile(files, params.file_id, user);
      const after = await files.execute(
        params.file_id,
        (s) => decideDescribeFile(s, { file_id: params.file_id, description: body.file_description, caller: user, at: Date.now() }),
        ctx.state.signal as AbortSignal | undefined,
      );
      const { file, access } = visibleFile(after, params.file_id, user);
      ctx.body = fileDetail(file, access, user.is_admin || file.owner === user.user_name);
    },
  });
}

/** DELETE /api/v1/files/{file_id}. */
export function deleteFileRoute(files: FileCatalog): RouteDef {
  return defineRoute({
    method: 'DELETE',
    path: '/api/v1/files/{file_id}',
    operationId: 'deleteFile',
    summary: 'Delete a file (its owner or an admin)',
    description:
      'Once answered, the deletion is in the log: every later command on the file gets 404 (or 503 while the read model catches up). Lists, lookups and downloads stop showing it once the files read model has projected the deletion: normally before this answer (the api waits up to MERIDIAN_FILES_READ_MODEL_WAIT_MS for it), later only when the read model lags past that bound. Its bytes are removed from storage once no other file has the same content. A reader or rw grantee gets 403.',
    tags: ['files'],
    auth: 'user',
    params: fileIdParam,
    responses: { 204: { description: 'Deleted' } },
    problems: ['not_found', 'forbidden'],
    handler: async (ctx, { params, user }) => {
      await findFile(files, params.file_id, user);
      await files.execute(
        params.file_id,
        (s) => decideDeleteFile(s, { file_id: params.file_id, caller: user, at: Date.now() }),
        ctx.state.signal as AbortSignal | undefined,
      );
      ctx.status = 204;
    },
  });
}
