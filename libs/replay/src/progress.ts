/** How far a rebuild is: what the progress line and a rebuild task show. */
export type RebuildProgress = {
  /** Log records read (events, and offsets that held markers). */
  readonly events: number;
  /** Points written to the new table. */
  readonly points: number;
  readonly elapsedMs: number;
  /** Offsets in the rebuild's range still to read. */
  readonly remaining: number;
  /** Offsets in the rebuild's range, read or not. */
  readonly total: number;
  /** Offsets between the rebuild's position and the end of the log now (grows while uploads arrive); null when not measured. */
  readonly lag: number | null;
};

const n = (x: number) => Math.round(x).toLocaleString('en');

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}` : `${m}:${String(sec).padStart(2, '0')}`;
}

/** Estimated time left, from the rate at which offsets of the range have been read so far; null before anything is read. */
export function etaMs(p: RebuildProgress): number | null {
  const done = p.total - p.remaining;
  if (p.remaining === 0) return 0;
  if (done <= 0 || p.elapsedMs <= 0) return null;
  return (p.remaining * p.elapsedMs) / done;
}

/** One line: `[####------]  42%  1,234 events  812,345 points (401,233 points/s)  ETA 0:12  lag 3 events`. */
export function formatProgress(p: RebuildProgress, width = 20): string {
  const fraction = p.total === 0 ? 1 : (p.total - p.remaining) / p.total;
  const filled = Math.min(width, Math.round(fraction * width));
  const rate = p.elapsedMs > 0 ? (p.points * 1000) / p.elapsedMs : 0;
  const eta = etaMs(p);
  return [
    `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`,
    `${String(Math.floor(fraction * 100)).padStart(3)}%`,
    `${n(p.events)} events`,
    `${n(p.points)} points (${n(rate)} points/s)`,
    `ETA ${eta === null ? '?' : duration(eta)}`,
    ...(p.lag === null ? [] : [`lag ${n(p.lag)} events`]),
  ].join('  ');
}
