import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { fileAsset, staticAssetRoute, type StaticAsset } from '../http/static-assets.ts';

/**
 * GET /docs: the OpenAPI document rendered by Swagger UI (swagger-ui-dist from npm), every
 * byte served from this origin. The page has no inline script or style of its own, and its
 * Content-Security-Policy lets it load and fetch nothing but this origin (images may also be
 * data: URIs, which Swagger UI's stylesheet uses for its icons: still nothing off-origin).
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const swaggerUiDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Meridian API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// Our own start-up script, served as a file so the page needs no inline script. No "Try it
// out" validator badge (it would call a third-party service): validatorUrl is null.
const init = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    persistAuthorization: false,
  });
});
`;

const fromPackage = (file: string, type: string): StaticAsset => fileAsset(join(swaggerUiDir, file), type);

/** The only files /docs/{asset} serves: a fixed list, never a path taken from the request. */
const assets: Readonly<Record<string, StaticAsset>> = {
  'swagger-ui.css': fromPackage('swagger-ui.css', 'text/css; charset=utf-8'),
  'swagger-ui-bundle.js': fromPackage('swagger-ui-bundle.js', 'text/javascript; charset=utf-8'),
  'favicon-32x32.png': fromPackage('favicon-32x32.png', 'image/png'),
  'favicon-16x16.png': fromPackage('favicon-16x16.png', 'image/png'),
  'init.js': { type: 'text/javascript; charset=utf-8', load: async () => Buffer.from(init) },
};

export function docsRoutes(): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/docs',
      operationId: 'docs',
      summary: "This API's documentation page (Swagger UI over /api/v1/openapi.json)",
      tags: ['operations'],
      auth: 'public',
      responses: { 200: { description: 'The HTML page', contentType: 'text/html', schema: z.string() } },
      handler: (ctx) => {
        ctx.set('Content-Security-Policy', DOCS_CSP);
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.set('Referrer-Policy', 'no-referrer');
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = page;
      },
    }),
    staticAssetRoute({
      path: '/docs',
      operationId: 'docsAsset',
      summary: 'A static file of the documentation page',
      description: 'Served from the swagger-ui-dist package installed with the api.',
      examples: ['swagger-ui.css', 'init.js'],
      assets,
      cacheControl: 'public, max-age=3600',
      notFound: 'no such documentation file',
    }),
  ];
}
