import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { notFound } from '@meridian/domain';
import { defineRoute, type RouteDef } from './route.ts';

/** A file a page of the api's own origin loads (/docs, /console), read once and kept. */
export type StaticAsset = { readonly type: string; load(): Promise<Buffer> };

/** The file at `path`, read on first use; a failed read is tried again next time. */
export function fileAsset(path: string, type: string): StaticAsset {
  let cached: Promise<Buffer> | undefined;
  return {
    type,
    load: () => {
      cached ??= readFile(path).catch((error: unknown) => {
        cached = undefined;
        throw error;
      });
      return cached;
    },
  };
}

/**
 * GET `<path>/{asset}`: one of a fixed list of files, never a path taken from the request;
 * anything else is the same 404.
 */
export function staticAssetRoute(def: {
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description: string;
  readonly examples: readonly string[];
  readonly assets: Readonly<Record<string, StaticAsset>>;
  readonly cacheControl: string;
  readonly notFound: string;
}): RouteDef {
  const { assets } = def;
  return defineRoute({
    method: 'GET',
    path: `${def.path}/{asset}`,
    operationId: def.operationId,
    summary: def.summary,
    description: `One of: ${Object.keys(assets).join(', ')}.${def.description ? ` ${def.description}` : ''}`,
    tags: ['operations'],
    auth: 'public',
    params: z.object({
      asset: z
        .string()
        .max(64)
        .meta({ examples: [...def.examples] }),
    }),
    responses: { 200: { description: 'The file', contentType: '*/*', schema: z.string() } },
    problems: ['not_found'],
    handler: async (ctx, { params }) => {
      const asset = Object.hasOwn(assets, params.asset) ? assets[params.asset] : undefined;
      if (!asset) throw notFound(def.notFound);
      ctx.set('Cache-Control', def.cacheControl);
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.type = asset.type;
      ctx.body = await asset.load();
    },
  });
}
