import { withTimeout } from '@meridian/observability';

/** One dependency a process (api, ingest) needs to serve: a name and a check that throws when it is down. */
export type Probe = { readonly name: string; check(): Promise<void> };

export type ProbeResult = { status: 'up' } | { status: 'down'; error: string };
export type Readiness = { ready: boolean; checks: Record<string, ProbeResult> };

/** Runs every probe at once, each bounded by the timeout, so one dead dependency cannot hide another. */
export async function checkReadiness(probes: readonly Probe[], timeoutMs: number): Promise<Readiness> {
  const results = await Promise.all(
    probes.map(async (p): Promise<[string, ProbeResult]> => {
      try {
        await withTimeout(p.check(), timeoutMs, p.name);
        return [p.name, { status: 'up' }];
      } catch (error) {
        return [p.name, { status: 'down', error: (error as Error).message || String(error) }];
      }
    }),
  );
  return { ready: results.every(([, r]) => r.status === 'up'), checks: Object.fromEntries(results) };
}

/** Only the status of each check, for a body anyone on the network may read: error texts name hosts, ports and driver messages. */
export function publicChecks(result: Readiness): Record<string, { status: ProbeResult['status'] }> {
  return Object.fromEntries(Object.entries(result.checks).map(([name, check]) => [name, { status: check.status }]));
}
