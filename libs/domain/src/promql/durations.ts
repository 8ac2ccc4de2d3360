/** Prometheus' duration syntax (model.ParseDuration): units in descending order, each at most once; a year is 365 days. */
const DURATION_RE = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const UNIT_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1];

/** A duration such as `5m` or `1h30m` in milliseconds, or null when the text is not one. */
export function parseDurationMs(text: string): number | null {
  if (text === '' || text === '0') return text === '0' ? 0 : null;
  const m = DURATION_RE.exec(text);
  if (!m) return null;
  let ms = 0;
  for (let i = 0; i < UNIT_MS.length; i += 1) {
    const n = m[i + 1];
    if (n !== undefined) ms += Number(n) * UNIT_MS[i]!;
  }
  return Number.isSafeInteger(ms) ? ms : null;
}
