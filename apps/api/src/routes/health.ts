import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { checkReadiness, type Probe } from '../http/readiness.ts';

const probeResult = z.object({ status: z.enum(['up', 'down']), error: z.string().optional() });
const readiness = z.object({ status: z.enum(['ready', 'unavailable']), checks: z.record(z.string(), probeResult) });

/** /healthz: the process answers. /readyz: every dependency answers (503 naming the ones that do not). */
export function healthRoutes(probes: readonly Probe[], timeoutMs: number): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/healthz',
      operationId: 'health',
      summary: 'Liveness: the process answers',
      tags: ['operations'],
      auth: 'public',
      responses: { 200: { description: 'Alive', schema: z.object({ status: z.literal('ok') }) } },
      handler: (ctx) => {
        ctx.body = { status: 'ok' };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/readyz',
      operationId: 'readiness',
      summary: 'Readiness: Kafka, ClickHouse, MinIO and the folded logs, each with its status',
      tags: ['operations'],
      auth: 'public',
      responses: {
        200: { description: 'Ready', schema: readiness },
        503: { description: 'Not ready: the failing checks say why', schema: readiness },
      },
      handler: async (ctx) => {
        const result = await checkReadiness(probes, timeoutMs);
        ctx.status = result.ready ? 200 : 503;
        ctx.body = { status: result.ready ? 'ready' : 'unavailable', checks: result.checks };
      },
    }),
  ];
}
