import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  contentTypeFor,
  decideDeleteFile,
  assertFileRoom,
  decideDescribeFile,
  decideGrantFileAccess,
  decideRevokeFileAccess,
  descriptionProblem,
  DomainError,
  fileAccess,
  fileQuotaOf,
  isUuid,
  NO_SUCH_FILE,
  notFound,
  quotaLeft,
  sanitizeFileName,
  validationError,
  visibleFile,
  type FileDefinitionRequested,
  type TasksState,
  type UserRecord,
} from '@meridian/domain';
import { STAGING_PREFIX, type Storage } from '@meridian/storage';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { writeProblem } from '../http/problem.ts';
import { contentDisposition, ifRangeHolds, noneMatchHits, parseRange } from './http-file.ts';
import type { FileCatalog } from './catalog.ts';
import { definitionsInFlight, pendingDefinitions, QuotaReservations } from './quota.ts';
import { stageForm, type FileLimit } from './stage-form.ts';
import { submitFileDefinition, type FileSubmitDeps } from './submit.ts';
import { fileDetail, fileDetailSchema, fileEntry, fileEntrySchema } from './views.ts';
import { discard } from '../uploads/stage-file.ts';

export type FileDeps = {
  readonly storage: Storage;
  /** The files read model, its waits for the projection, and the file commands (catalog.ts). */
  readonly files: FileCatalog;
  readonly tasks: () => TasksState;
  readonly submit: FileSubmitDeps;
  /** defaultQuotaBytes: for users an admin gave no quota of their own; filesPerUser: MERIDIAN_MAX_FILES_PER_USER (no cap when left out). */
  readonly limits: { readonly uploadBytes: number; readonly defaultQuotaBytes: number; readonly filesPerUser?: number; readonly grantsPerFile?: number };
};

/** Room for the multipart framing and text fields when judging a body by its Content-Length. */
const FORM_OVERHEAD = 1024 * 1024;

const fileIdParam = z.object({ file_id: z.string().describe('UUID from the file list; anything else is 404, as an unknown file') });
const grantParams = fileIdParam.extend({ user_name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 letters, digits, ".", "_" or "-"') });
const accepted = z.object({ task_id: z.uuid(), file_id: z.uuid().describe('the id the file has once the task succeeds') });
const defineForm = z.object({
  file: z.string().describe('the file (binary); its part\'s filename becomes file_name (directories and control characters removed), its Content-Type the served type'),
  file_description: z.string().max(10_000).optional().describe('free text'),
  file_size_limit: z.string().regex(/^\d+$/).optional().describe('integer bytes (1,000,000 bytes = 1 MB): a larger file is refused with 413'),
  enforce_schema: z.enum(['true', 'false']).optional().describe('true: the file must be well-formed CSV with a header row and the same number of fields on every row, or JSON, or NDJSON; otherwise the task fails naming the line. Default false: any bytes'),
});

const DEFINE_DESCRIPTION = [
  'Multipart form: `file` (required), `file_description`, `file_size_limit`, `enforce_schema`; the text fields may come before or after the file.',
  'The bytes are streamed into storage while their SHA-256 and size are computed, never held in memory.',
  'The file may not be larger than the smallest of `file_size_limit`, the largest upload (MERIDIAN_MAX_UPLOAD_BYTES) and what is left of the account\'s quota (its own, set by an admin with PUT /api/v1/users/{user_name}/file_quota, else MERIDIAN_FILE_QUOTA_BYTES; less its files and the definitions still in progress); over it the answer is 413 as soon as the limit is passed, and nothing is kept (for the quota, the detail says how many bytes are left).',
  'An empty file is refused (400). A user holds at most MERIDIAN_MAX_FILES_PER_USER files (live ones plus definitions in progress); past it the answer is 409 /problems/limit-reached, before the body is read.',
  'Answers 202 once the command is durably in the event log; the file appears in GET /api/v1/files when the task succeeds (its result carries the file_id).',
  'POST /api/v1/file/new and POST /api/v1/files are the same operation (the seed names the first; its sample request uses the second).',
].join(' ');

function parseSizeLimit(value: string | undefined): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  const n = Number(text);
  if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(n)) throw validationError('file_size_limit must be a whole number of bytes', [{ field: 'file_size_limit', reason: 'not a non-negative integer' }]);
  return n;
}

function parseEnforceSchema(value: string | undefined): boolean {
  if (value === undefined) return false;
  const text = value.trim().toLowerCase();
  if (text !== 'true' && text !== 'false') throw validationError('enforce_schema must be true or false', [{ field: 'enforce_schema', reason: 'not true or false' }]);
  return text === 'true';
}

function parseDescription(value: string | undefined): string {
  const description = value ?? '';
  const problem = descriptionProblem(description);
  if (problem) throw validationError(`invalid file_description: ${problem}`, [{ field: 'file_description', reason: problem }]);
  return description;
}

export function fileRoutes(deps: FileDeps): RouteDef[] {
  const reservations = new QuotaReservations();

  /**
   * What the user stores (the read model's usage, read after the bounded wait for the projection)
   * and which of their definitions in flight the read model shows already. The ids are asked
   * before the usage: a file the projection adds in between is then counted twice (refusing
   * early), never not at all.
   */
  const standingOf = async (user: UserRecord) => {
    await deps.files.current();
    const defined = new Set((await deps.files.rows(definitionsInFlight(deps.tasks(), user.user_name).map((d) => d.file_id))).map((r) => r.file.file_id));
    const usage = (await deps.files.usage([user.user_name])).get(user.user_name) ?? { bytes: 0, files: 0 };
    return { usage, defined };
  };
  type Standing = Awaited<ReturnType<typeof standingOf>>;
  /** Definitions in flight (from the tasks in memory now) that the standing does not show yet. */
  const pendingOf = (user: UserRecord, standing: Standing) => pendingDefinitions(definitionsInFlight(deps.tasks(), user.user_name), standing.defined);
  /** The user's quota, and what they may still store: it less live files, definitions in flight and this process's reservations. */
  const quotaOf = (user: UserRecord, standing: Standing) => {
    const quota = fileQuotaOf(user, deps.limits.defaultQuotaBytes);
    const pending = pendingOf(user, standing).bytes + reservations.reserved(user.user_name);
    return { quota, left: quotaLeft(standing.usage.bytes, quota, pending) };
  };
  /** Refuses one more file to a user at the files cap (live files, definitions in flight, this process's reservations). */
  const assertRoomFor = (user: UserRecord, standing: Standing) => {
    if (deps.limits.filesPerUser === undefined) return;
    const pending = pendingOf(user, standing).count + reservations.count(user.user_name);
    assertFileRoom({ owned: standing.usage.files, pending, max_files: deps.limits.filesPerUser });
  };
  const limits = {
    sizeLimit: (n: number): FileLimit => ({ bytes: n, tooLarge: () => new DomainError('payload_too_large', `the file is larger than its file_size_limit of ${n} bytes`, [{ field: 'file_size_limit', reason: `${n} bytes` }]) }),
    upload: (): FileLimit => ({ bytes: deps.limits.uploadBytes, tooLarge: () => new DomainError('payload_too_large', `the file is larger than the largest upload of ${deps.limits.uploadBytes} bytes`, [{ field: 'file', reason: `at most ${deps.limits.uploadBytes} bytes` }]) }),
    quota: ({ quota, left }: { quota: number; left: number }): FileLimit => ({
      bytes: left,
      tooLarge: () => new DomainError('payload_too_large', `the file does not fit in the account's quota: ${left} bytes left of ${quota}`, [{ field: 'file', reason: `${left} bytes of quota left` }]),
    }),
  };
  const smallest = (...candidates: Array<FileLimit | null>): FileLimit =>
    candidates.filter((c): c is FileLimit => c !== null).reduce((a, b) => (b.bytes < a.bytes ? b : a));

  /**
   * The file if the caller may see it. An id the read model does not show the caller (unknown or
   * someone else's: the same path) is asked again once the projection has reached the log's end
   * (bounded), so a file is found right after its definition succeeded, on any instance.
   */
  const findFile = async (fileId: string, user: UserRecord) => {
    const lookup = async () => {
      const file = await deps.files.get(fileId);
      const access = fileAccess(file, user);
      return file && access !== null ? { file, access } : null;
    };
    if (!isUuid(fileId)) throw notFound(NO_SUCH_FILE);
    let found = await lookup();
    if (!found) {
      await deps.files.current();
      found = await lookup();
    }
    if (!found) throw notFound(NO_SUCH_FILE);
    return found;
  };

  const defineFile = async (ctx: Context, { user }: { user: UserRecord }) => {
    const fileId = randomUUID();
    const taskId = randomUUID();
    const stagedKey = `${STAGING_PREFIX}files/${fileId}`;
    // A refusal before the body is read closes the connection (problemMiddleware): nothing more is read.
    const before = await standingOf(user);
    assertRoomFor(user, before);
    const ceiling = smallest(limits.upload(), limits.quota(quotaOf(user, before)));
    const declared = Number(ctx.get('Content-Length') || Number.NaN);
    if (Number.isFinite(declared) && declared > ceiling.bytes + FORM_OVERHEAD) throw ceiling.tooLarge();
    const staged = await stageForm(ctx.req, deps.storage, stagedKey, (fields) => {
      const sizeLimit = parseSizeLimit(fields.get('file_size_limit'));
      return smallest(sizeLimit === null ? null : limits.sizeLimit(sizeLimit), limits.upload(), limits.quota(quotaOf(user, before)));
    });
    // An empty file stores nothing, yet costs a catalog entry in every process: refused, as an
    // empty metrics upload is (stageForm staged nothing for it).
    if (staged.bytes === 0) throw validationError('the file is empty', [{ field: 'file', reason: 'empty' }]);
    let release: (() => void) | null = null;
    try {
      // Every field is known now, including those sent after the file.
      const sizeLimit = parseSizeLimit(staged.fields.get('file_size_limit'));
      const description = parseDescription(staged.fields.get('file_description'));
      const enforceSchema = parseEnforceSchema(staged.fields.get('enforce_schema'));
      if (sizeLimit !== null && staged.bytes > sizeLimit) throw limits.sizeLimit(sizeLimit).tooLarge();
      // Check and reserve in one synchronous step after reading the standing: a concurrent upload
      // of the same user sees this one (its reservation, or its task in flight).
      const standing = await standingOf(user);
      assertRoomFor(user, standing);
      const now = quotaOf(user, standing);
      if (staged.bytes > now.left) throw limits.quota(now).tooLarge();
      release = reservations.reserve(user.user_name, staged.bytes);
      const fileName = sanitizeFileName(staged.filename);
      const command: FileDefinitionRequested = {
        type: 'FileDefinitionRequested',
        task_id: taskId,
        file_id: fileId,
        user_name: user.user_name,
        at: Date.now(),
        file_name: fileName,
        description,
        content_type: contentTypeFor(staged.mimeType, fileName),
        staged_object: stagedKey,
        size: staged.bytes,
        sha256: staged.sha256,
        enforce_schema: enforceSchema,
      };
      await submitFileDefinition(deps.submit, command);
    } catch (error) {
      await discard(deps.storage, stagedKey);
      throw error;
    } finally {
      release?.();
    }
    ctx.status = 202;
    ctx.set('Location', `/api/v1/tasks/${taskId}`);
    ctx.body = { task_id: taskId, file_id: fileId };
  };

  const defineRouteAt = (path: string, operationId: string, summary: string) => defineRoute({
    method: 'POST',
    path,
    operationId,
    summary,
    description: DEFINE_DESCRIPTION,
    tags: ['files'],
    auth: 'user',
    requestBodyDoc: { contentTypes: { 'multipart/form-data': defineForm } },
    responses: { 202: { description: 'Accepted; follow the task (Location header)', schema: accepted, example: { task_id: '4a3c6f8e-0f5e-4d1a-9a53-3c1f0e9b2d7a', file_id: '0d7c3e2a-5b6f-4e1d-8c9a-1f2e3d4c5b6a' } } },
    problems: ['validation', 'payload_too_large', 'limit_reached', 'unavailable'],
    streaming: true,
    handler: defineFile,
  });

  return [
    defineRouteAt('/api/v1/file/new', 'defineFile', 'Define a file: upload it (background task)'),
    defineRouteAt('/api/v1/files', 'defineFileAtFiles', 'Define a file: upload it (background task); same as POST /api/v1/file/new'),
    defineRoute({
      method: 'GET',
      path: '/api/v1/files',
      operationId: 'listFiles',
      summary: 'The files the caller may see',
      description: 'The caller\'s own files and those shared with them (an admin sees every file), newest first. A file appears once its definition task has succeeded. Pages of `limit` files; `next_cursor` (null on the last page) fetches the next one.',
      tags: ['files'],
      auth: 'user',
      query: z.object({
        name_contains: z.string().min(1).max(255).optional().describe('only files whose name contains this text, ignoring case'),
        limit: z.coerce.number().int().min(1).max(1000).default(1000),
        cursor: z.string().regex(/^\d{1,15}$/, 'a next_cursor from a previous page').optional(),
      }),
      responses: {
        200: {
          description: 'Files',
          schema: z.object({ files_list: z.array(fileEntrySchema), next_cursor: z.string().nullable() }),
          example: { files_list: [{ created_at: '2024-01-02T03:04:05+0000', entitlement: 'rw', file_description: 'daily export', file_id: '0d7c3e2a-5b6f-4e1d-8c9a-1f2e3d4c5b6a', file_name: 'export.csv', user_name: 'ada' }], next_cursor: null },
        },
      },
      handler: async (ctx, { query, user }) => {
        // A definition of the caller that succeeded may not be projected yet: wait (bounded) for the projection first.
        if (definitionsInFlight(deps.tasks(), user.user_name).some((d) => d.succeeded)) await deps.files.current();
        const page = await deps.files.list(user, { name_contains: query.name_contains, limit: query.limit, cursor: query.cursor === undefined ? undefined : Number(query.cursor) });
        ctx.body = { files_list: page.files.map(({ file, access }) => fileEntry(file, access)), next_cursor: page.next_cursor === null ? null : String(page.next_cursor) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/file/download/{file_id}',
      operationId: 'downloadFile',
      summary: 'Download a file',
      description: [
        'Streams the bytes with Content-Type (as uploaded, detected from the name, or application/octet-stream), Content-Length, Content-Disposition: attachment (RFC 6266, with an RFC 5987 filename* for any name) and ETag (the quoted hex SHA-256).',
        'If-None-Match with the ETag → 304. One byte range (Range: bytes=a-b, a- or -n) → 206 with Content-Range; If-Range is honoured. Several ranges, or a Range that cannot be parsed, get the whole file (200); a range starting past the end → 416 with Content-Range: bytes */size.',
        'An unknown id, a file of someone else and a malformed id all get the same 404.',
      ].join(' '),
      tags: ['files'],
      auth: 'user',
      params: fileIdParam,
      // Parsed leniently, as RFC 9110 asks: a Range that cannot be used means the whole file, not a 400.
      headers: z.object({
        'if-none-match': z.string().optional().describe('If-None-Match: the ETag of a copy the caller holds → 304'),
        range: z.string().optional().describe('Range: one range bytes=a-b, a- or -n → 206; several or unparseable → the whole file'),
        'if-range': z.string().optional().describe('If-Range: the ETag; Range applies only when it still matches'),
      }),
      responses: {
        200: {
          description: 'The whole file',
          contentType: 'application/octet-stream',
          schema: z.string().describe('the file\'s bytes'),
          headers: {
            ETag: { description: 'quoted hex SHA-256 of the bytes', schema: z.string() },
            'Content-Disposition': { description: 'attachment; filename="…"; filename*=UTF-8\'\'…', schema: z.string() },
            'Accept-Ranges': { description: 'bytes', schema: z.string() },
          },
        },
        206: { description: 'The requested byte range', contentType: 'application/octet-stream', schema: z.string(), headers: { 'Content-Range': { description: 'bytes a-b/size', schema: z.string() } } },
        304: { description: 'Not modified: If-None-Match matched the ETag' },
      },
      problems: ['not_found', 'range_not_satisfiable'],
      streaming: true,
      handler: async (ctx, { params, headers, user }) => {
        const { file } = await findFile(params.file_id, user);
        const etag = `"${file.sha256}"`;
        ctx.set('ETag', etag);
        ctx.set('Accept-Ranges', 'bytes');
        ctx.set('Cache-Control', 'private, no-cache');
        if (noneMatchHits(headers['if-none-match'] || undefined, etag)) {
          ctx.status = 304;
          return;
        }
        const range = ifRangeHolds(headers['if-range'] || undefined, etag) ? parseRange(headers.range || undefined, file.size) : { kind: 'whole' as const };
        if (range.kind === 'unsatisfiable') {
          ctx.set('Content-Range', `bytes */${file.size}`);
          writeProblem(ctx, 'range_not_satisfiable', `the file has ${file.size} bytes; the range starts beyond them`);
          return;
        }
        const [start, end] = range.kind === 'range' ? [range.start, range.end] : [0, file.size - 1];
        const length = Math.max(0, end - start + 1);
        ctx.set('Content-Disposition', contentDisposition(file.file_name));
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.set('Content-Type', file.content_type); // as stored: ctx.type would add a charset the bytes may not have
        ctx.status = range.kind === 'range' ? 206 : 200;
        if (range.kind === 'range') ctx.set('Content-Range', `bytes ${start}-${end}/${file.size}`);
        if (ctx.method !== 'HEAD' && length > 0) {
          const { client, bucket } = deps.storage;
          ctx.body = range.kind === 'range' ? await client.getPartialObject(bucket, file.blob_key, start, length) : await client.getObject(bucket, file.blob_key);
        } else if (ctx.method !== 'HEAD') {
          ctx.body = '';
        }
        ctx.length = length;
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/files/{file_id}',
      operationId: 'getFile',
      summary: 'One file\'s entry, with its size, hash, type and (for its owner) who it is shared with',
      tags: ['files'],
      auth: 'user',
      params: fileIdParam,
      responses: { 200: { description: 'The file', schema: fileDetailSchema } },
      problems: ['not_found'],
      handler: async (ctx, { params, user }) => {
        const { file, access } = await findFile(params.file_id, user);
        ctx.body = fileDetail(file, access, user.is_admin || file.owner === user.user_name);
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/api/v1/files/{file_id}',
      operationId: 'describeFile',
      summary: 'Replace a file\'s description (rw access)',
      tags: ['files'],
      auth: 'user',
      params: fileIdParam,
      body: z.object({ file_description: z.string().max(10_000) }),
      responses: { 200: { description: 'The file after the change', schema: fileDetailSchema } },
      problems: ['not_found', 'forbidden'],
      handler: async (ctx, { params, body, user }) => {
        await findFile(params.file_id, user);
        const after = await deps.files.execute(params.file_id, (s) => decideDescribeFile(s, { file_id: params.file_id, description: body.file_description, caller: user, at: Date.now() }));
        const { file, access } = visibleFile(after, params.file_id, user);
        ctx.body = fileDetail(file, access, user.is_admin || file.owner === user.user_name);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/api/v1/files/{file_id}',
      operationId: 'deleteFile',
      summary: 'Delete a file (its owner or an admin)',
      description: 'The file leaves every list and download at once; its bytes are removed from storage once no other file has the same content. A reader or rw grantee gets 403.',
      tags: ['files'],
      auth: 'user',
      params: fileIdParam,
      responses: { 204: { description: 'Deleted' } },
      problems: ['not_found', 'forbidden'],
      handler: async (ctx, { params, user }) => {
        await findFile(params.file_id, user);
        await deps.files.execute(params.file_id, (s) => decideDeleteFile(s, { file_id: params.file_id, caller: user, at: Date.now() }));
        ctx.status = 204;
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/api/v1/files/{file_id}/entitlements/{user_name}',
      operationId: 'shareFile',
      summary: 'Give another user r or rw access to a file (its owner or an admin)',
      description: 'r: the user lists and downloads the file. rw: also replaces its description. Only the owner (or an admin) shares, unshares and deletes. Granting again replaces the access. Any well-formed user name is granted, whether or not such a user exists or is enabled (the answer does not tell): the grant gives access to no one while no enabled user holds the name. A file is shared with at most MERIDIAN_MAX_GRANTS_PER_FILE users (409 /problems/limit-reached past it).',
      tags: ['files'],
      auth: 'user',
      params: grantParams,
      body: z.object({ access: z.enum(['r', 'rw']) }),
      responses: { 200: { description: 'The file after the change', schema: fileDetailSchema } },
      problems: ['not_found', 'forbidden', 'limit_reached'],
      handler: async (ctx, { params, body, user }) => {
        await findFile(params.file_id, user);
        // Not looked up among the users: an unknown or disabled name is granted like any other (decideGrantFileAccess).
        const after = await deps.files.execute(params.file_id, (s) => decideGrantFileAccess(s, { file_id: params.file_id, grantee: params.user_name, access: body.access, max_grants: deps.limits.grantsPerFile ?? Number.POSITIVE_INFINITY, caller: user, at: Date.now() }));
        const { file, access } = visibleFile(after, params.file_id, user);
        ctx.body = fileDetail(file, access, true);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/api/v1/files/{file_id}/entitlements/{user_name}',
      operationId: 'unshareFile',
      summary: 'Take a user\'s access to a file (its owner or an admin)',
      tags: ['files'],
      auth: 'user',
      params: grantParams,
      responses: { 204: { description: 'Revoked' } },
      problems: ['not_found', 'forbidden'],
      handler: async (ctx, { params, user }) => {
        await findFile(params.file_id, user);
        await deps.files.execute(params.file_id, (s) => decideRevokeFileAccess(s, { file_id: params.file_id, grantee: params.user_name, caller: user, at: Date.now() }));
        ctx.status = 204;
      },
    }),
  ];
}
