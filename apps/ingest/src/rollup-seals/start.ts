import type { IngestDeps } from '../ingest-deps.ts';
import { startPeriodic } from '../periodic.ts';
import type { RollupSealOptions } from './options.ts';

/**
 * The seal pass of the rollups MERIDIAN_ROLLUP_SEAL_RESOLUTIONS names (none when off) every
 * MERIDIAN_ROLLUP_SEAL_INTERVAL_MS while `leads` says so (one
 * per deployment): the closed buckets not sealed at their count get their sealed row, at most
 * MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS per resolution. A failed pass is logged and tried again next time.
 */
export function startRollupSeals(ingest: IngestDeps, options: RollupSealOptions, leads: () => boolean): { stop(): Promise<void> } {
  if (options.resolutions.length === 0) return { stop: () => Promise.resolve() };
  const logger = ingest.logger.child({ component: 'rollup-seals' });
  const pass = ingest.sealRollups(options.maxBuckets, options.resolutions);
  // A pass over a large scope runs for minutes: stopping the worker abandons it (and kills its
  // statements on the server) rather than waiting for its end.
  const abort = new AbortController();
  const periodic = startPeriodic(async () => {
    try {
      if (!leads()) return;
      const started = performance.now();
      const stats = await pass.run(abort.signal);
      if (stats.some((s) => s.buckets > 0)) logger.info({ stats, ms: Math.round(performance.now() - started) }, 'rollup buckets sealed');
    } catch (error) {
      if (abort.signal.aborted) logger.info('a seal pass was stopped with the worker; the next start seals what it left');
      else logger.warn({ err: error }, 'sealing rollup buckets failed; trying again at the next interval');
    }
  }, options.intervalMs);
  return {
    async stop() {
      abort.abort(new Error('the ingest worker is stopping'));
      await periodic.stop();
    },
  };
}
