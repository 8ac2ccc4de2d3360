import { z } from 'zod';
import type { Registry } from 'prom-client';
import { defineRoute, type RouteDef } from '../http/route.ts';

const example = [
  '# HELP meridian_http_requests_total HTTP requests answered, by method, route template and status.',
  '# TYPE meridian_http_requests_total counter',
  'meridian_http_requests_total{method="GET",route="/api/v1/tasks/{task_id}",status="200"} 3',
].join('\n');

/**
 * GET /metrics: Prometheus text exposition of the api's registry. Public, as scrapers expect;
 * it shows counts by route template and status, never a path, a user or a key. Keep it off
 * the public edge in production (expose only /api/v1 and /docs there).
 */
export function metricsRoute(registry: () => Registry | undefined): RouteDef {
  return defineRoute({
    method: 'GET',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics of this api instance',
    description:
      "Prometheus text format 0.0.4: http request counts and latency histograms by route template and status, uploads accepted, points ingested, tasks by status, the ingest consumer groups' lag per partition (meridian_consumer_lag, read from Kafka at each scrape), the points archive's lag per partition (meridian_archive_lag_offsets, meridian_archive_oldest_unarchived_seconds), projection freshness (meridian_projection_pending_seconds: the age of the oldest upload whose points are not all queryable yet), and the Node process.",
    tags: ['operations'],
    auth: 'public',
    responses: { 200: { description: 'The metrics', contentType: 'text/plain', schema: z.string(), example } },
    handler: async (ctx) => {
      const reg = registry();
      ctx.set('Cache-Control', 'no-store');
      ctx.type = reg?.contentType ?? 'text/plain; version=0.0.4; charset=utf-8';
      ctx.body = reg ? await reg.metrics() : '';
    },
  });
}
