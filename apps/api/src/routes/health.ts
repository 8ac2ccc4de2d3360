import Router from '@koa/router';
import { checkReadiness, type Probe } from '../http/readiness.ts';

/** /healthz: the process answers. /readyz: every dependency answers (503 naming the ones that do not). */
export function healthRoutes(probes: readonly Probe[], timeoutMs: number): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const readiness = await checkReadiness(probes, timeoutMs);
    ctx.status = readiness.ready ? 200 : 503;
    ctx.body = { status: readiness.ready ? 'ready' : 'unavailable', checks: readiness.checks };
  });
  return router;
}
