import type { Context } from 'koa';
import { DomainError, type RawParams } from '@meridian/domain';
import { readBody } from '../uploads/read-body.ts';

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** The parameters of one request: the query string, and on POST the form body too, as Go's Request.Form merges them (body first). */
export type RequestParams = { readonly first: RawParams; all(name: string): string[] };

function collect(into: Map<string, string[]>, params: URLSearchParams): void {
  for (const [name, value] of params) into.set(name, [...(into.get(name) ?? []), value]);
}

export async function requestParams(ctx: Context, maxBodyBytes: number): Promise<RequestParams> {
  const values = new Map<string, string[]>();
  if (ctx.method === 'POST') {
    const contentType = ctx.get('Content-Type');
    if (!FORM.test(contentType))
      throw new DomainError('unsupported_media_type', "the body must be application/x-www-form-urlencoded, as Prometheus' API takes it");
    const bytes = await readBody(ctx.req, maxBodyBytes);
    collect(values, new URLSearchParams(bytes.toString('utf8')));
  }
  collect(values, new URLSearchParams(ctx.querystring));
  const first: Record<string, string> = {};
  for (const [name, list] of values) first[name] = list[0]!;
  return { first, all: (name) => values.get(name) ?? [] };
}
