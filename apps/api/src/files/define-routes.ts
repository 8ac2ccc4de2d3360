import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import {
  assertFileRoom,
  contentTypeFor,
  descriptionProblem,
  DomainError,
  fileQuotaOf,
  quotaLeft,
  sanitizeFileName,
  validationError,
  type FileDefinitionRequested,
  type UserRecord,
} from '@meridian/domain';
import { STAGING_PREFIX } from '@meridian/storage';
import { defineRoute, type RouteDef } from '../http/route.ts';
import type { FileDeps } from './deps.ts';
import { definitionsInFlight, pendingDefinitions, QuotaReservations } from './quota.ts';
import { assertDeclaredSize, discard, stageForm, type FileLimit } from '../uploads/stage-file.ts';
import { submitCommand } from '../tasks/submit-command.ts';

const accepted = z.object({ task_id: z.uuid(), file_id: z.uuid().describe('the id the file has once the task succeeds') });
const defineForm = z.object({
  file: z
    .string()
    .describe("the file (binary); its part's filename becomes file_name (directories and control characters removed), its Content-Type the served type"),
  file_description: z.string().max(10_000).optional().describe('free text'),
  file_size_limit: z.string().regex(/^\d+$/).optional().describe('integer bytes (1,000,000 bytes = 1 MB): a larger file is refused with 413'),
  enforce_schema: z
    .enum(['true', 'false'])
    .optional()
    .describe(
      'true: the file must be well-formed CSV with a header row and the same number of fields on every row, or JSON, or NDJSON; otherwise the task fails naming the line. Default false: any bytes',
    ),
});

const DEFINE_DESCRIPTION = [
  'Multipart form: `file` (required), `file_description`, `file_size_limit`, `enforce_schema`; the text fields may come before or after the file.',
  'The bytes are streamed into storage while their SHA-256 and size are computed, never held in memory.',
  "The file may not be larger than the smallest of `file_size_limit`, the largest upload (MERIDIAN_MAX_UPLOAD_BYTES) and what is left of the account's quota (its own, set by an admin with PUT /api/v1/users/{user_name}/file_quota, else MERIDIAN_FILE_QUOTA_BYTES; less its files and the definitions still in progress); over it the answer is 413 as soon as the limit is passed, and nothing is kept (for the quota, the detail says how many bytes are left).",
  'An empty file is refused (400). A user holds at most MERIDIAN_MAX_FILES_PER_USER files (live ones plus definitions in progress); past it the answer is 409 /problems/limit-reached, before the body is read.',
  'Answers 202 once the command is durably in the event log; the file appears in GET /api/v1/files when the task succeeds (its result carries the file_id).',
  'POST /api/v1/file/new and POST /api/v1/files are the same operation (the seed names the first; its sample request uses the second).',
].join(' ');

function parseSizeLimit(value: string | undefined): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) {
    throw validationError(`file_size_limit must be a whole number of bytes from 0 to ${Number.MAX_SAFE_INTEGER} (the upload limit and your quota apply too)`, [
      { field: 'file_size_limit', reason: `not an integer from 0 to ${Number.MAX_SAFE_INTEGER}` },
    ]);
  }
  return n;
}

function parseEnforceSchema(value: string | undefined): boolean {
  if (value === undefined) return false;
  const text = value.trim().toLowerCase();
  if (text !== 'true' && text !== 'false')
    throw validationError('enforce_schema must be true or false', [{ field: 'enforce_schema', reason: 'not true or false' }]);
  return text === 'true';
}

function parseDescription(value: string | undefined): string {
  const description = value ?? '';
  const problem = descriptionProblem(description);
  if (problem) throw validationError(`invalid file_description: ${problem}`, [{ field: 'file_description', reason: problem }]);
  return description;
}

/** The three bounds on a file's size, each with the 413 it answers past it. */
const limits = {
  sizeLimit: (n: number): FileLimit => ({
    bytes: n,
    tooLarge: () =>
      new DomainError('payload_too_large', `the file is larger than its file_size_limit of ${n} bytes`, [{ field: 'file_size_limit', reason: `${n} bytes` }]),
  }),
  upload: (uploadBytes: number): FileLimit => ({
    bytes: uploadBytes,
    tooLarge: () =>
      new DomainError('payload_too_large', `the file is larger than the largest upload of ${uploadBytes} bytes`, [
        { field: 'file', reason: `at most ${uploadBytes} bytes` },
      ]),
  }),
  quota: ({ quota, left }: { quota: number; left: number }): FileLimit => ({
    bytes: left,
    tooLarge: () =>
      new DomainError('payload_too_large', `the file does not fit in the account's quota: ${left} bytes left of ${quota}`, [
        { field: 'file', reason: `${left} bytes of quota left` },
      ]),
  }),
};
const smallest = (...candidates: Array<FileLimit | null>): FileLimit =>
  candidates.filter((c): c is FileLimit => c !== null).reduce((a, b) => (b.bytes < a.bytes ? b : a));

/** The route that defines a file, at one of its two paths. */
function defineRouteAt(path: string, operationId: string, summary: string, handler: (ctx: Context, args: { user: UserRecord }) => Promise<void>): RouteDef {
  return defineRoute({
    method: 'POST',
    path,
    operationId,
    summary,
    description: DEFINE_DESCRIPTION,
    tags: ['files'],
    auth: 'user',
    requestBodyDoc: { contentTypes: { 'multipart/form-data': defineForm } },
    responses: {
      202: {
        description: 'Accepted; follow the task (Location header)',
        schema: accepted,
        example: { task_id: '4a3c6f8e-0f5e-4d1a-9a53-3c1f0e9b2d7a', file_id: '0d7c3e2a-5b6f-4e1d-8c9a-1f2e3d4c5b6a' },
      },
    },
    problems: ['validation', 'payload_too_large', 'limit_reached', 'unavailable'],
    streaming: true,
    handler,
  });
}

/**
 * POST /api/v1/file/new and POST /api/v1/files: stage the form's file, then submit its
 * definition. Both paths share one set of this process's quota reservations.
 */
export function defineFileRoutes(deps: FileDeps): RouteDef[] {
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

  const defineFile = async (ctx: Context, { user }: { user: UserRecord }) => {
    const fileId = randomUUID();
    const taskId = randomUUID();
    const stagedKey = `${STAGING_PREFIX}files/${fileId}`;
    // A refusal before the body is read closes the connection (problemMiddleware): nothing more is read.
    const before = await standingOf(user);
    assertRoomFor(user, before);
    const ceiling = smallest(limits.upload(deps.limits.uploadBytes), limits.quota(quotaOf(user, before)));
    assertDeclaredSize(ctx.req, ceiling);
    const staged = await stageForm(ctx.req, deps.storage, stagedKey, 'the file', (fields) => {
      const sizeLimit = parseSizeLimit(fields.get('file_size_limit'));
      return smallest(sizeLimit === null ? null : limits.sizeLimit(sizeLimit), limits.upload(deps.limits.uploadBytes), limits.quota(quotaOf(user, before)));
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
      // A file has no Idempotency-Key: a command that lands after a 503 fails its task for want of
      // the staged bytes removed below, rather than define a file the client was told was refused.
      await submitCommand(deps.submit, command, 'the file was not accepted, retry later');
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

  return [
    defineRouteAt('/api/v1/file/new', 'defineFile', 'Define a file: upload it (background task)', defineFile),
    defineRouteAt('/api/v1/files', 'defineFileAtFiles', 'Define a file: upload it (background task); same as POST /api/v1/file/new', defineFile),
  ];
}
