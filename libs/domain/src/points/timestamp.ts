/**
 * Point timestamps: `YYYY-MM-DDTHH:MM:SS[.fraction]` with a REQUIRED offset, as epoch
 * milliseconds UTC. Hand-written over char codes (the upload parser calls this once or twice
 * per row, millions of times), with integer calendar arithmetic. Pure: no clock, no time zone.
 */

export type TimestampResult = { ok: true; ms: number } | { ok: false; reason: string };

/** 1970-01-01T00:00:00Z, the first accepted instant (inclusive). */
export const MIN_TIMESTAMP_MS = 0;
/** 2106-01-01T00:00:00Z, the first instant past the accepted range (exclusive): ClickHouse DateTime's limit. */
export const END_TIMESTAMP_MS = 4_291_747_200_000;

const DAY_MS = 86_400_000;

const FORMAT_REASON = 'expected YYYY-MM-DDTHH:MM:SS with an optional .fraction and an offset Z, +hhmm, -hhmm, +hh:mm or -hh:mm';
const OFFSET_REQUIRED_REASON = 'an offset is required (Z, +hhmm, -hhmm, +hh:mm or -hh:mm); the time zone is never guessed';
const OFFSET_FORMAT_REASON = 'the offset must be Z, +hhmm, -hhmm, +hh:mm or -hh:mm';
const SUB_MS_REASON = 'sub-millisecond precision would be lost';
const RANGE_REASON = 'out of range: must be from 1970-01-01T00:00:00Z (inclusive) to 2106-01-01T00:00:00Z (exclusive)';

const fail = (reason: string): TimestampResult => ({ ok: false, reason });

/** The digit at i (0-9), or -1 for anything else, including past `end`. */
function digit(text: string, i: number, end: number): number {
  const d = i < end ? text.charCodeAt(i) - 48 : -1;
  return d >= 0 && d <= 9 ? d : -1;
}

/** Two digits at i as a number, or -1 (the caller has checked that i + 1 < end). */
function two(text: string, i: number): number {
  const a = text.charCodeAt(i) - 48;
  const b = text.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

const DATE_LENGTH = 10; // YYYY-MM-DD

/**
 * Reads timestamps straight from a range of a larger text (a CSV chunk), without a string or
 * a result object per call. Rows of an upload come in time order, so most timestamps share
 * their date with the one before: the last valid date's text and its day number are kept,
 * and a timestamp with the same `YYYY-MM-DD` skips parsing and checking it again (a valid
 * date stays valid whatever follows it, so the result and the reason are the same as a full parse).
 */
export class TimestampReader {
  /** Why the last read() returned -1. */
  reason = '';
  private date = ''; // the last valid date's text, '' for none
  private days = 0;

  /** The epoch ms of text[start, end), or -1 (see `reason`); the rules are parseTimestamp's. */
  read(text: string, start: number, end: number): number {
    const len = end - start;
    if (len < 19) return this.fail(FORMAT_REASON);
    const cached = this.date !== '' && text.startsWith(this.date, start);
    let year = 0;
    let month = 1;
    let day = 1;
    if (!cached) {
      const century = two(text, start);
      const yearOfCentury = two(text, start + 2);
      month = two(text, start + 5);
      day = two(text, start + 8);
      if ((century | yearOfCentury | month | day) < 0 || text.charCodeAt(start + 4) !== 45 || text.charCodeAt(start + 7) !== 45)
        return this.fail(FORMAT_REASON); // -
      year = century * 100 + yearOfCentury;
    }
    const hour = two(text, start + 11);
    const minute = two(text, start + 14);
    const second = two(text, start + 17);
    if (
      (hour | minute | second) < 0 ||
      text.charCodeAt(start + 10) !== 84 || // T
      text.charCodeAt(start + 13) !== 58 || // :
      text.charCodeAt(start + 16) !== 58
    ) {
      return this.fail(FORMAT_REASON);
    }

    let pos = start + 19;
    let millis = 0;
    let subMillis = false;
    if (pos < end && text.charCodeAt(pos) === 46) {
      // .fraction
      pos++;
      const from = pos;
      while (digit(text, pos, end) >= 0) pos++;
      const digits = pos - from;
      if (digits === 0 || digits > 9) return this.fail(FORMAT_REASON);
      for (let i = 0; i < 3; i++) millis = millis * 10 + (i < digits ? digit(text, from + i, end) : 0);
      for (let i = from + 3; i < pos; i++) if (text.charCodeAt(i) !== 48) subMillis = true;
    }

    let offsetMinutes = 0;
    let offsetHour = 0;
    let offsetMinute = 0;
    if (pos === end) return this.fail(OFFSET_REQUIRED_REASON);
    const sign = text.charCodeAt(pos);
    if (sign === 90) {
      // Z
      if (pos + 1 !== end) return this.fail(OFFSET_FORMAT_REASON);
    } else if (sign === 43 || sign === 45) {
      // + or -
      if (end === pos + 5) {
        offsetHour = two(text, pos + 1);
        offsetMinute = two(text, pos + 3);
      } else if (end === pos + 6 && text.charCodeAt(pos + 3) === 58) {
        offsetHour = two(text, pos + 1);
        offsetMinute = two(text, pos + 4);
      } else return this.fail(OFFSET_FORMAT_REASON);
      if (offsetHour < 0 || offsetMinute < 0) return this.fail(OFFSET_FORMAT_REASON);
      offsetMinutes = (sign === 45 ? -1 : 1) * (offsetHour * 60 + offsetMinute);
    } else {
      return this.fail(OFFSET_FORMAT_REASON);
    }

    if (!cached) {
      if (month < 1 || month > 12) return this.fail(`month ${pad2(month)} is out of range 01-12`);
      if (day < 1 || day > daysInMonth(year, month)) {
        return this.fail(`day ${pad2(day)} does not exist in ${String(year).padStart(4, '0')}-${pad2(month)}`);
      }
    }
    if (hour > 23) return this.fail(`hour ${pad2(hour)} is out of range 00-23`);
    if (minute > 59) return this.fail(`minute ${pad2(minute)} is out of range 00-59`);
    if (second > 59) return this.fail(`second ${pad2(second)} is out of range 00-59`);
    if (offsetHour > 23) return this.fail(`offset hour ${pad2(offsetHour)} is out of range 00-23`);
    if (offsetMinute > 59) return this.fail(`offset minute ${pad2(offsetMinute)} is out of range 00-59`);
    if (subMillis) return this.fail(SUB_MS_REASON);

    if (!cached) {
      // The date is valid: later timestamps with the same text reuse its day number.
      this.date = text.slice(start, start + DATE_LENGTH);
      this.days = daysFromCivil(year, month, day);
    }
    const ms = this.days * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offsetMinutes * 60_000;
    if (ms < MIN_TIMESTAMP_MS || ms >= END_TIMESTAMP_MS) return this.fail(RANGE_REASON);
    return ms;
  }

  private fail(reason: string): number {
    this.reason = reason;
    return -1;
  }
}

const reader = new TimestampReader();

/**
 * Parses `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9 digits, then an offset
 * (`Z`, `+hhmm`, `-hhmm`, `+hh:mm`, `-hh:mm`) into epoch milliseconds UTC. Strict: no
 * surrounding spaces, upper-case `T` and `Z` only, no leap seconds, fraction digits past the
 * milliseconds must be zeros, and the instant must lie in [1970-01-01Z, 2106-01-01Z).
 */
export function parseTimestamp(text: string): TimestampResult {
  const ms = reader.read(text, 0, text.length);
  return ms >= 0 ? { ok: true, ms } : fail(reader.reason);
}

/**
 * Formats epoch milliseconds as `YYYY-MM-DDTHH:MM:SS+0000` (UTC), with `.sss` only when the
 * milliseconds are not zero. Throws a RangeError for anything parseTimestamp cannot return
 * (not an integer, or outside [1970-01-01Z, 2106-01-01Z)): that is a programming error.
 */
export function formatTimestamp(ms: number): string {
  if (!Number.isInteger(ms) || ms < MIN_TIMESTAMP_MS || ms >= END_TIMESTAMP_MS) {
    throw new RangeError(`formatTimestamp: ${ms} is not an integer epoch millisecond in [${MIN_TIMESTAMP_MS}, ${END_TIMESTAMP_MS})`);
  }
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ for this range
  return ms % 1000 === 0 ? `${iso.slice(0, 19)}+0000` : `${iso.slice(0, 23)}+0000`;
}
