import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { notServing, type ConsumerWatch } from '@meridian/kafka';
import type { Logger } from '@meridian/observability';
import { checkReadiness, publicChecks, type Probe } from '@meridian/runtime';

export type HealthServerOptions = {
  readonly host: string;
  readonly port: number;
  /** The dependencies (Kafka, ClickHouse, MinIO). */
  readonly probes: readonly Probe[];
  /** Filled once the worker runs; empty while it is still preparing. */
  readonly consumers: () => readonly ConsumerWatch[];
  readonly readyTimeoutMs: number;
  readonly logger: Logger;
};

/**
 * The ingest worker's probe listener (it serves nothing else). /healthz: no consumer has failed
 * for good (503 problem+json naming it otherwise). /readyz: every dependency answers and every
 * consumer has joined its group; the body names checks only, the reasons go to the log, as on
 * the api's public /readyz.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<{ readonly port: number; close(): Promise<void> }> {
  const consumerProbes = (): Probe[] =>
    options.consumers().map((watch) => ({
      name: `${watch.name} consumer`,
      check: async () => {
        const why = notServing(watch.name, watch.state);
        if (why !== null) throw new Error(why);
      },
    }));
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return problem(res, 405, 'Method not allowed', `${req.method ?? ''} is not served here; use GET`, { Allow: 'GET, HEAD' });
    if (path === '/healthz') {
      const failed = options
        .consumers()
        .map((w) => (w.state.kind === 'failed' ? notServing(w.name, w.state) : null))
        .filter((why) => why !== null);
      if (failed.length === 0) return json(res, 200, { status: 'ok' });
      return problem(res, 503, 'Dependency unavailable', failed.join('; '), { 'Retry-After': '1' });
    }
    if (path === '/readyz') {
      // The consumers are not running yet while the worker prepares topics and tables: not ready.
      const starting: Probe[] =
        options.consumers().length === 0 ? [{ name: 'consumers', check: () => Promise.reject(new Error('the worker is still starting')) }] : [];
      void checkReadiness([...options.probes, ...consumerProbes(), ...starting], options.readyTimeoutMs).then((result) => {
        if (!result.ready) options.logger.warn({ checks: result.checks }, 'not ready');
        json(res, result.ready ? 200 : 503, { status: result.ready ? 'ready' : 'unavailable', checks: publicChecks(result) });
      });
      return;
    }
    problem(res, 404, 'Not found', `${path} is not served here: /healthz and /readyz are`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown, type = 'application/json', headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

/** An RFC 9457 body with the api's problem types (apps/api/src/http/problem.ts). */
function problem(res: ServerResponse, status: 404 | 405 | 503, title: string, detail: string, headers: Record<string, string> = {}): void {
  const type = { 404: '/problems/not-found', 405: '/problems/method-not-allowed', 503: '/problems/unavailable' }[status];
  json(res, status, { type, title, status, detail }, 'application/problem+json', headers);
}
