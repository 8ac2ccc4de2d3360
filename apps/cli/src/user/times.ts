import { formatTimestamp, parseDateBound } from '@meridian/domain';

/**
 * The times --from and --to take: what the api takes (YYYY-MM-DD, an ISO 8601 date-time with an
 * offset; checked here by the api's own parser and passed on as given), and times relative to
 * now, turned into a UTC date-time here: `now`, `-1h`, `now-7d`, `now+30m` (units s, m, h, d, w).
 */
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

const RELATIVE = /^(now)?(?:([+-])(\d{1,9})([smhdw]))?$/;

export const TIME_FORMS =
  'expected a date (2024-01-02), a date-time with an offset (2024-01-02T03:04:05Z), now, or a time relative to now (-1h, now-7d; units s m h d w)';

/** The time to send the api, or why `text` is not one. */
export function resolveTime(text: string, now: number): { ok: true; value: string } | { ok: false; reason: string } {
  const m = RELATIVE.exec(text);
  if (m && text !== '' && (m[1] !== undefined || m[2] !== undefined)) {
    const at = now + (m[2] === undefined ? 0 : (m[2] === '-' ? -1 : 1) * Number(m[3]) * UNIT_MS[m[4]!]!);
    const checked = parseDateBound(new Date(Math.min(Math.max(0, at), 8.64e15)).toISOString(), 'start');
    return checked.ok ? { ok: true, value: formatTimestamp(checked.ms) } : { ok: false, reason: checked.reason };
  }
  return parseDateBound(text, 'start').ok ? { ok: true, value: text } : { ok: false, reason: TIME_FORMS };
}
