import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { writeProblem } from '../http/problem.ts';
import type { FileDeps } from './deps.ts';
import { contentDisposition, ifRangeHolds, noneMatchHits, parseRange } from './http-file.ts';
import { fileIdParam, findFile } from './lookup.ts';

/** GET /api/v1/file/download/{file_id}: the bytes, with ETag, conditional requests and one byte range. */
export function downloadFileRoute(deps: Pick<FileDeps, 'files' | 'storage'>): RouteDef {
  return defineRoute({
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
        schema: z.string().describe("the file's bytes"),
        headers: {
          ETag: { description: 'quoted hex SHA-256 of the bytes', schema: z.string() },
          'Content-Disposition': { description: 'attachment; filename="…"; filename*=UTF-8\'\'…', schema: z.string() },
          'Accept-Ranges': { description: 'bytes', schema: z.string() },
        },
      },
      206: {
        description: 'The requested byte range',
        contentType: 'application/octet-stream',
        schema: z.string(),
        headers: { 'Content-Range': { description: 'bytes a-b/size', schema: z.string() } },
      },
      304: { description: 'Not modified: If-None-Match matched the ETag' },
    },
    problems: ['not_found', 'range_not_satisfiable'],
    streaming: true,
    handler: async (ctx, { params, headers, user }) => {
      const { file } = await findFile(deps.files, params.file_id, user);
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
        ctx.body = await deps.storage.open(file.blob_key, range.kind === 'range' ? { start, length } : undefined);
      } else if (ctx.method !== 'HEAD') {
        ctx.body = '';
      }
      ctx.length = length;
    },
  });
}
