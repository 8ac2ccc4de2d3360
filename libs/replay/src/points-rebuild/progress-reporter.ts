import type { LogRanges, PartitionRange } from '@meridian/domain';
import type { RebuildProgress } from '../progress.ts';

export type ProgressInput = {
  readonly log: LogRanges;
  readonly topic: string;
  readonly onProgress?: (progress: RebuildProgress) => void;
  readonly progressEveryMs?: number;
  readonly measureLag?: boolean;
};

/**
 * A rebuild's progress line: `report()` hands onProgress a snapshot at most every progressEveryMs
 * (`report(true)`: now), and with measureLag asks the log's end offsets at most every 2 s.
 */
export function progressReporter(
  input: ProgressInput,
  ranges: readonly PartitionRange[],
  position: ReadonlyMap<number, number>,
  total: number,
  counts: { readonly events: number; readonly points: number },
  started: number,
): (force?: boolean) => void {
  let lag: number | null = null;
  const remaining = () => ranges.reduce((n, r) => n + (r.end - position.get(r.partition)!), 0);
  const snapshot = (): RebuildProgress => ({
    events: counts.events,
    points: counts.points,
    elapsedMs: performance.now() - started,
    remaining: remaining(),
    total,
    lag,
  });
  let lastReport = 0;
  let lagBusy = false;
  let lastLag = 0;
  return (force = false) => {
    const now = performance.now();
    if (input.measureLag && !lagBusy && now - lastLag >= 2000) {
      lagBusy = true;
      lastLag = now;
      input.log
        .offsets(input.topic)
        .then(({ end }) => {
          lag = [...end].reduce((n, [p, e]) => n + Math.max(0, e - (position.get(p) ?? e)), 0);
        })
        .catch(() => undefined)
        .finally(() => {
          lagBusy = false;
        });
    }
    if (!input.onProgress || (!force && now - lastReport < (input.progressEveryMs ?? 1000))) return;
    lastReport = now;
    input.onProgress(snapshot());
  };
}
