import { z } from 'zod';
import type { Logger } from '@meridian/observability';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { checkReadiness, publicChecks, type Probe } from '@meridian/runtime';

const status = z.enum(['ready', 'unavailable']);
/** The public answer: dependency names and up/down, never an address or an error text. */
const readiness = z.object({ status, checks: z.record(z.string(), z.object({ status: z.enum(['up', 'down']) })) });
/** The admin listener's answer: why each dependency is down, too. */
const detailedReadiness = z.object({ status, checks: z.record(z.string(), z.object({ status: z.enum(['up', 'down']), error: z.string().optional() })) });

const readinessResponses = (schema: z.ZodType) => ({
  200: { description: 'Ready', schema },
  503: { description: 'Not ready: the failing checks are down', schema },
});

/**
 * /healthz: the process answers. /readyz: every dependency answers (503 naming the ones that
 * do not). Its body names dependencies only; why one is down goes to the log, and to the
 * admin listener's /readyz when there is one (detailedReadinessRoute).
 */
export function healthRoutes(probes: readonly Probe[], timeoutMs: number, logger: Logger): RouteDef[] {
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
      summary: 'Readiness: Kafka, ClickHouse, MinIO and the folded logs, each up or down',
      tags: ['operations'],
      auth: 'public',
      responses: readinessResponses(readiness),
      handler: async (ctx) => {
        const result = await checkReadiness(probes, timeoutMs);
        if (!result.ready) ((ctx.state.log as Logger | undefined) ?? logger).warn({ checks: result.checks }, 'not ready');
        ctx.status = result.ready ? 200 : 503;
        ctx.body = { status: result.ready ? 'ready' : 'unavailable', checks: publicChecks(result) };
      },
    }),
  ];
}

/** The admin listener's /readyz: each failing check with its error text. */
export function detailedReadinessRoute(probes: readonly Probe[], timeoutMs: number): RouteDef {
  return defineRoute({
    method: 'GET',
    path: '/readyz',
    operationId: 'readinessDetailed',
    summary: 'Readiness with the reason each dependency is down (admin listener only)',
    tags: ['operations'],
    auth: 'public',
    responses: readinessResponses(detailedReadiness),
    handler: async (ctx) => {
      const result = await checkReadiness(probes, timeoutMs);
      ctx.status = result.ready ? 200 : 503;
      ctx.body = { status: result.ready ? 'ready' : 'unavailable', checks: result.checks };
    },
  });
}
