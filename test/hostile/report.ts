import { withTimeout } from '@meridian/observability';
import { AFTER_EACH, type Checks, type HostileStack } from './stack.ts';

/** Longest a case may take: then it fails with that, and its checks still run and its row is written. */
const CASE_MS = 150_000;

type Row = { id: string; name: string; verdict: 'pass' | 'FAIL'; outcome: string; checks: string };

/**
 * The tier's table of case → outcome → checks, printed once at the end so it shows in
 * `make test`'s output. `runCase` runs a case, then the after-each checks whatever the case
 * did, records a row, and fails the test if either failed.
 */
export class HostileReport {
  private readonly rows: Row[] = [];
  private readonly stack: HostileStack;

  constructor(stack: HostileStack) {
    this.stack = stack;
  }

  /**
   * `body` returns a one-line outcome ("403 problem+json, nothing staged"); `settings` are
   * those the case relies on, named in the row when this build does not know them.
   */
  async runCase(id: string, name: string, settings: readonly string[], body: () => Promise<string>): Promise<void> {
    const ingestBefore = this.stack.ingest;
    const t0 = performance.now();
    let outcome: string;
    let error: unknown = null;
    try {
      outcome = await withTimeout(body(), CASE_MS, 'the case');
    } catch (e) {
      error = e;
      outcome = `FAILED: ${firstLine(e)}`;
    }
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    const unknown = settings.filter((s) => this.stack.unknownSettings({ [s]: '' }).includes(s));
    if (unknown.length > 0) outcome += ` [not in this build: ${unknown.join(', ')}]`;
    const checks = await this.stack.checkAfter(ingestBefore);
    this.rows.push({
      id,
      name,
      verdict: error === null && checks.failures.length === 0 ? 'pass' : 'FAIL',
      outcome: `${outcome} (${seconds} s)`,
      checks: describeChecks(checks),
    });
    if (error !== null) throw error;
    if (checks.failures.length > 0) throw new Error(`after the case: ${checks.failures.join('; ')}`);
  }

  print(): void {
    const header = `Hostile tier: after each case /healthz ≤ ${AFTER_EACH.healthzMs} ms, the same ingest PID, ${AFTER_EACH.canaryPoints} canary points downloadable ≤ ${AFTER_EACH.canaryMs / 1000} s`;
    const lines = this.rows.map((r) => `${r.id}. ${r.verdict.padEnd(4)} ${r.name}\n      outcome: ${r.outcome}\n      checks:  ${r.checks}`);
    console.log(
      `\n${header}\n${'-'.repeat(header.length)}\n${lines.join('\n')}\n${this.rows.filter((r) => r.verdict === 'pass').length} of ${this.rows.length} cases passed\n`,
    );
  }
}

function describeChecks(c: Checks): string {
  const health = Number.isFinite(c.healthzMs) ? `healthz ${c.healthzMs.toFixed(1)} ms` : 'healthz no answer';
  const ingest = c.ingestSamePid ? `ingest pid ${c.ingestPid} alive` : `ingest pid ${c.ingestPid} DIED`;
  const canary = c.canaryMs === null ? 'canary NOT downloadable in time' : `canary downloadable in ${(c.canaryMs / 1000).toFixed(2)} s`;
  return [health, ingest, canary].join(', ') + (c.failures.length > 0 ? ` — ${c.failures.join('; ')}` : '');
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 300);
}
