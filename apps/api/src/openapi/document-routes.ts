import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { buildOpenApi } from './document.ts';

/** GET /api/v1/openapi.json: the contract, generated from the routes it describes (itself included). */
export function openApiRoute(routes: () => readonly RouteDef[], version: string): RouteDef {
  let document: unknown;
  return defineRoute({
    method: 'GET',
    path: '/api/v1/openapi.json',
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tags: ['operations'],
    auth: 'public',
    responses: { 200: { description: 'The OpenAPI document', schema: z.object({ openapi: z.string() }).passthrough() } },
    handler: (ctx) => {
      document ??= buildOpenApi(routes(), version);
      ctx.body = document;
    },
  });
}
