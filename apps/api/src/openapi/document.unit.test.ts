import { describe, expect, it } from 'vitest';
import { apiRoutes, buildRouter } from '../app.ts';
import { buildOpenApi } from './document.ts';
import { inertApiDeps } from './inert-deps.ts';

// Structure only: no handler runs, so the dependencies are inert.
const deps = inertApiDeps();

describe('the OpenAPI document', () => {
  const doc = buildOpenApi(apiRoutes(deps), '1.0.0') as {
    openapi: string;
    paths: Record<string, Record<string, { responses: Record<string, unknown>; operationId: string }>>;
  };

  it('covers exactly the routes the router serves', () => {
    const router = buildRouter(deps);
    const served = router.stack
      .flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`))
      .sort();
    const documented = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(served.length).toBeGreaterThan(10);
    expect(documented).toEqual(served);
  });

  it('is OpenAPI 3.1 with unique operation ids and a problem response on every operation', () => {
    expect(doc.openapi).toBe('3.1.0');
    const ops = Object.values(doc.paths).flatMap((o) => Object.values(o));
    expect(new Set(ops.map((o) => o.operationId)).size).toBe(ops.length);
    for (const op of ops) expect(Object.keys(op.responses), op.operationId).toContain('500');
  });

  it('documents the seed endpoints with their parameters', () => {
    expect(doc.paths['/api/v1/metrics/upload']?.post).toBeDefined();
    expect(doc.paths['/api/v1/metrics_file_upload']?.post).toBeDefined();
    expect(doc.paths['/api/v1/users']?.get).toBeDefined();
    expect(doc.paths['/api/v1/files']?.get).toBeDefined();
    expect(doc.paths['/api/v1/files']?.post).toBeDefined();
    expect(doc.paths['/api/v1/file/new']?.post).toBeDefined();
    expect(JSON.stringify(doc.paths['/api/v1/file/download/{file_id}'])).toContain('"in":"path"');
    expect(JSON.stringify(doc.paths['/api/v1/tasks/{task_id}'])).toContain('"in":"path"');
    expect(doc.paths['/api/v1/events']?.get).toBeDefined();
  });

  it('documents the headers routes read and every content type a route answers with', () => {
    type Op = { parameters?: Array<{ name: string; in: string }>; responses: Record<string, { content?: Record<string, unknown> }> };
    const op = (path: string, method: string) => (doc.paths[path] as unknown as Record<string, Op>)[method]!;
    const headers = (o: Op) =>
      (o.parameters ?? [])
        .filter((p) => p.in === 'header')
        .map((p) => p.name)
        .sort();
    expect(headers(op('/api/v1/metrics/upload', 'post'))).toEqual(['idempotency-key']);
    expect(headers(op('/api/v1/metrics_file_upload', 'post'))).toEqual(['idempotency-key']);
    expect(headers(op('/api/v1/file/download/{file_id}', 'get'))).toEqual(['if-none-match', 'if-range', 'range']);
    expect(Object.keys(op('/api/v1/metrics/download', 'get').responses['200']!.content!).sort()).toEqual([
      'application/json',
      'application/vnd.apache.arrow.stream',
      'application/vnd.apache.parquet',
      'text/csv',
    ]);
  });

  it('documents the POST form of the download: form and JSON bodies, 413 and 415, X-Next-Cursor without Link', () => {
    type Op = {
      requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
      responses: Record<string, { headers?: Record<string, unknown> }>;
    };
    const post = (doc.paths['/api/v1/metrics/download'] as unknown as Record<string, Op>).post!;
    expect(Object.keys(post.requestBody!.content).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    expect(Object.keys(post.requestBody!.content['application/json']!.schema.properties!)).toContain('metrics');
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['200', '400', '404', '413', '415', '429']));
    expect(Object.keys(post.responses['200']!.headers!)).toContain('X-Next-Cursor');
    expect(Object.keys(post.responses['200']!.headers!)).not.toContain('Link');
  });
});
