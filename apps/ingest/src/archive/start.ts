import { archivePass, trimPass, type ArchivePass } from '@meridian/kafka';
import { withDeadline } from '@meridian/observability';
import type { IngestDeps } from '../ingest-deps.ts';
import { startPeriodic } from '../periodic.ts';
import type { ArchiveOptions } from './options.ts';

/**
 * The archiver of this worker, with MERIDIAN_ARCHIVE on: every MERIDIAN_ARCHIVE_INTERVAL_MS,
 * while `leads` says so (the member projecting points partition 0, one per deployment), a pass
 * archives the points topic to its last stable offset, then removes from the brokers what is
 * archived, projected and past MERIDIAN_ARCHIVE_RETENTION_MS. A pass lists only the index keys
 * written since the one before; a failed pass, or one past MERIDIAN_ARCHIVE_PASS_TIMEOUT_MS, is
 * logged and the next one starts again from the whole archive index, so a crash or a hang
 * anywhere repeats work and never skips or doubles a record (an abandoned pass's last request
 * may still land: two archivers overlapping is a race the archive already takes).
 */
export function startArchiver(ingest: IngestDeps, options: ArchiveOptions | null, leads: () => boolean): { stop(): Promise<void> } {
  const { topics } = ingest;
  if (options === null) return { stop: () => Promise.resolve() };
  const logger = ingest.logger.child({ component: 'archive' });
  const abort = new AbortController();
  // Each pass hands the partial tails it read and left to the next, which reads only what is new.
  let tails: ArchivePass['tails'] = new Map();
  // And where the archive ended, so that a pass lists only the index keys written since (chain-ends.ts).
  let chainEnds: ArchivePass['chainEnds'] | undefined;
  const periodic = startPeriodic(async () => {
    if (!leads()) {
      tails = new Map();
      chainEnds = undefined;
      return;
    }
    try {
      await withDeadline(
        async (signal) => {
          const pass = await archivePass({
            log: ingest.archive.log,
            objects: ingest.archive.objects,
            topic: topics.points,
            groupPrefix: `${ingest.groups.projector}-archive-pass-`,
            segmentBytes: options.segmentBytes,
            // Half the window: a partial segment waits that long to fill, and is archived well before the trim wants it gone.
            tailAgeMs: options.retentionMs / 2,
            logger,
            signal,
            tails,
            ...(chainEnds ? { chainEnds } : {}),
          });
          // A pass abandoned at its deadline may still end; what it kept is not the next pass's.
          signal.throwIfAborted();
          tails = pass.tails;
          chainEnds = pass.chainEnds;
          if (pass.segments > 0) logger.info({ segments: pass.segments, records: pass.records, ends: Object.fromEntries(pass.ends) }, 'points archived');
          await trimPass({
            log: ingest.archive.log,
            objects: ingest.archive.objects,
            topic: topics.points,
            projectorGroup: ingest.groups.projector,
            retentionMs: options.retentionMs,
            logger,
            chainEnds,
          });
        },
        options.passTimeoutMs,
        'an archiving pass',
        abort.signal,
      );
    } catch (error) {
      tails = new Map();
      chainEnds = undefined;
      if (!abort.signal.aborted) logger.warn({ err: error }, 'archiving the points topic failed; the next pass starts again from the archive index');
    }
  }, options.intervalMs);
  return {
    async stop() {
      abort.abort();
      await periodic.stop();
    },
  };
}
