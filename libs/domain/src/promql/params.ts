import { parseDurationMs } from './durations.ts';
import { badData } from './errors.ts';

/** The parameters of the query API as strings (a GET's query string or a POST's form), first value of each. */
export type RawParams = Readonly<Record<string, string | undefined>>;

// time.Parse(time.RFC3339Nano, …): a date, T, a time with optional fraction, Z or an offset.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Timestamps further than this from 1970 (about 125,000 years) are refused: every time the
 * evaluation derives from one (minus a range and an offset) stays an exact integer.
 */
const MAX_TIME_MS = 4e15;

/** A timestamp parameter as Prometheus reads it: Unix seconds (float, rounded to the millisecond) or RFC 3339. Epoch ms. */
export function parseTimeMs(name: string, text: string): number {
  const t = /^\s*$/.test(text) ? Number.NaN : Number(text);
  if (Number.isFinite(t) && Math.abs(t) * 1000 <= MAX_TIME_MS) {
    const seconds = Math.trunc(t);
    return seconds * 1000 + Math.round((t - seconds) * 1000);
  }
  const m = RFC3339.exec(text);
  if (m) {
    const [, y, mo, d, h, mi, s, frac = '', zone] = m;
    const base = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
    // Go keeps nanoseconds and the millisecond timestamp truncates them.
    const ms = frac === '' ? 0 : Math.trunc(Number(`0${frac}`) * 1000 + 1e-9);
    let offset = 0;
    if (zone !== 'Z' && zone !== 'z') {
      const sign = zone!.startsWith('-') ? -1 : 1;
      offset = sign * (Number(zone!.slice(1, 3)) * 60 + Number(zone!.slice(4, 6))) * 60_000;
    }
    const valid = Number(mo) >= 1 && Number(mo) <= 12 && Number(d) >= 1 && Number(d) <= 31 && Number(h) < 24 && Number(mi) < 60 && Number(s) < 60;
    if (valid && Number.isFinite(base)) return base + ms - offset;
  }
  throw badData(`invalid parameter "${name}": cannot parse "${text}" to a valid timestamp`);
}

/** A duration parameter (step, timeout): float seconds or a PromQL duration such as 5m. Milliseconds. */
export function parseDurationParamMs(name: string, text: string): number {
  const seconds = /^\s*$/.test(text) ? Number.NaN : Number(text);
  if (Number.isFinite(seconds) && Math.abs(seconds) * 1000 <= MAX_TIME_MS) return Math.trunc(seconds * 1000);
  const ms = parseDurationMs(text);
  if (ms !== null && ms <= MAX_TIME_MS) return ms;
  throw badData(`invalid parameter "${name}": cannot parse "${text}" to a valid duration`);
}

export type InstantParams = { readonly query: string; readonly timeMs: number };
export type RangeParams = { readonly query: string; readonly startMs: number; readonly endMs: number; readonly stepMs: number };

export function parseInstantParams(raw: RawParams, nowMs: number): InstantParams {
  const time = raw['time'];
  return { query: raw['query'] ?? '', timeMs: time === undefined || time === '' ? nowMs : parseTimeMs('time', time) };
}

/** query_range's parameters, with Prometheus' checks and messages; maxPoints is its resolution bound (11,000 in Prometheus). */
export function parseRangeParams(raw: RawParams, maxPoints: number): RangeParams {
  const startMs = parseTimeMs('start', raw['start'] ?? '');
  const endMs = parseTimeMs('end', raw['end'] ?? '');
  if (endMs < startMs) throw badData('end timestamp must not be before start time');
  const stepMs = parseDurationParamMs('step', raw['step'] ?? '');
  if (stepMs <= 0) throw badData('zero or negative query resolution step widths are not accepted. Try a positive integer');
  if (Math.floor((endMs - startMs) / stepMs) > maxPoints) {
    throw badData(`exceeded maximum resolution of ${maxPoints.toLocaleString('en-US')} points per timeseries. Try decreasing the query resolution (?step=XX)`);
  }
  return { query: raw['query'] ?? '', startMs, endMs, stepMs };
}

/** The optional start and end of series, labels and label values; all of time when left out. */
export function parseOptionalRange(raw: RawParams): { startMs: number; endMs: number } {
  const start = raw['start'];
  const end = raw['end'];
  return {
    startMs: start === undefined || start === '' ? Number.MIN_SAFE_INTEGER : parseTimeMs('start', start),
    endMs: end === undefined || end === '' ? Number.MAX_SAFE_INTEGER : parseTimeMs('end', end),
  };
}
