import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { fileAsset, staticAssetRoute, type StaticAsset } from '../http/static-assets.ts';
import { DOCS_CSP } from '../openapi/docs-routes.ts';
import { faviconIco } from './favicon.ts';

/**
 * GET /console: the analysts' and producers' page (apps/api/src/console: one HTML file, one ES
 * module, one stylesheet) and uPlot, its chart library, from the uplot package installed with
 * the api. Every byte comes from this origin under the same 'self'-only policy as /docs; the
 * page calls the api with the key the user types, held in sessionStorage.
 */
const consoleDir = fileURLToPath(new URL('./', import.meta.url));
const uplotDir = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const page = fileAsset(join(consoleDir, 'index.html'), 'text/html; charset=utf-8');

/** The only files /console/{asset} serves: a fixed list, never a path taken from the request. */
const assets: Readonly<Record<string, StaticAsset>> = {
  'console.js': fileAsset(join(consoleDir, 'console.js'), JS),
  'console.css': fileAsset(join(consoleDir, 'console.css'), CSS),
  'query.js': fileAsset(join(consoleDir, 'query.js'), JS),
  'uPlot.esm.js': fileAsset(join(uplotDir, 'uPlot.esm.js'), JS),
  'uPlot.min.css': fileAsset(join(uplotDir, 'uPlot.min.css'), CSS),
};

export function consoleRoutes(): RouteDef[] {
  const icon = faviconIco();
  return [
    defineRoute({
      method: 'GET',
      path: '/favicon.ico',
      operationId: 'favicon',
      summary: "The site's icon (the one browsers ask for by themselves)",
      tags: ['operations'],
      auth: 'public',
      responses: { 200: { description: 'A 16×16 icon', contentType: 'image/x-icon', schema: z.string() } },
      handler: (ctx) => {
        ctx.set('Cache-Control', 'public, max-age=86400');
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.type = 'image/x-icon';
        ctx.body = icon;
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/console',
      operationId: 'console',
      summary: 'The console: browse, chart and download metrics, follow tasks, upload and download files',
      tags: ['operations'],
      auth: 'public',
      responses: { 200: { description: 'The HTML page', contentType: 'text/html', schema: z.string() } },
      handler: async (ctx) => {
        ctx.set('Content-Security-Policy', DOCS_CSP);
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.set('Referrer-Policy', 'no-referrer');
        ctx.set('Cache-Control', 'no-cache');
        ctx.type = page.type;
        ctx.body = await page.load();
      },
    }),
    staticAssetRoute({
      path: '/console',
      operationId: 'consoleAsset',
      summary: 'A static file of the console',
      description: '',
      examples: ['console.js', 'uPlot.esm.js'],
      assets,
      cacheControl: 'no-cache',
      notFound: 'no such console file',
    }),
  ];
}
