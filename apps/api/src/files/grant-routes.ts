import { z } from 'zod';
import { decideGrantFileAccess, decideRevokeFileAccess, visibleFile } from '@meridian/domain';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { FileCatalog } from './catalog.ts';
import { fileIdParam, findFile } from './lookup.ts';
import { fileDetail, fileDetailSchema } from './views.ts';

const grantParams = fileIdParam.extend({ user_name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 letters, digits, ".", "_" or "-"') });

/** PUT /api/v1/files/{file_id}/entitlements/{user_name}: share a file. */
export function shareFileRoute(files: FileCatalog, grantsPerFile: number | undefined): RouteDef {
  return defineRoute({
    method: 'PUT',
    path: '/api/v1/files/{file_id}/entitlements/{user_name}',
    operationId: 'shareFile',
    summary: 'Give another user r or rw access to a file (its owner or an admin)',
    description:
      'r: the user lists and downloads the file. rw: also replaces its description. Only the owner (or an admin) shares, unshares and deletes. Granting again replaces the access. Any well-formed user name is granted, whether or not such a user exists or is enabled (the answer does not tell): the grant gives access to no one while no enabled user holds the name. A file is shared with at most MERIDIAN_MAX_GRANTS_PER_FILE users (409 /problems/limit-reached past it).',
    tags: ['files'],
    auth: 'user',
    params: grantParams,
    body: z.object({ access: z.enum(['r', 'rw']) }),
    responses: { 200: { description: 'The file after the change', schema: fileDetailSchema } },
    problems: ['not_found', 'forbidden', 'limit_reached'],
    handler: async (ctx, { params, body, user }) => {
      await findFile(files, params.file_id, user);
      // Not looked up among the users: an unknown or disabled name is granted like any other (decideGrantFileAccess).
      const after = await files.execute(
        params.file_id,
        (s) =>
          decideGrantFileAccess(s, {
            file_id: params.file_id,
            grantee: params.user_name,
            access: body.access,
            max_grants: grantsPerFile ?? Number.POSITIVE_INFINITY,
            caller: user,
            at: Date.now(),
          }),
        ctx.state.signal as AbortSignal | undefined,
      );
      const { file, access } = visibleFile(after, params.file_id, user);
      ctx.body = fileDetail(file, access, true);
    },
  });
}

/** DELETE /api/v1/files/{file_id}/entitlements/{user_name}: unshare it. */
export function unshareFileRoute(files: FileCatalog): RouteDef {
  return defineRoute({
    method: 'DELETE',
    path: '/api/v1/files/{file_id}/entitlements/{user_name}',
    operationId: 'unshareFile',
    summary: "Take a user's access to a file (its owner or an admin)",
    tags: ['files'],
    auth: 'user',
    params: grantParams,
    responses: { 204: { description: 'Revoked' } },
    problems: ['not_found', 'forbidden'],
    handler: async (ctx, { params, user }) => {
      await findFile(files, params.file_id, user);
      await files.execute(
        params.file_id,
        (s) => decideRevokeFileAccess(s, { file_id: params.file_id, grantee: params.user_name, caller: user, at: Date.now() }),
        ctx.state.signal as AbortSignal | undefined,
      );
      ctx.status = 204;
    },
  });
}
