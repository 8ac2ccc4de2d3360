import { withTimeout } from '@meridian/observability';

/** One dependency the api needs to serve: a name and a check that throws when it is down. */
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
