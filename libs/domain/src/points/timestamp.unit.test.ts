import { describe, expect, it } from 'vitest';
import { END_TIMESTAMP_MS, formatTimestamp, MIN_TIMESTAMP_MS, parseTimestamp, TimestampReader } from './timestamp.ts';

const FORMAT = 'expected YYYY-MM-DDTHH:MM:SS with an optional .fraction and an offset Z, +hhmm, -hhmm, +hh:mm or -hh:mm';
const OFFSET_REQUIRED = 'an offset is required (Z, +hhmm, -hhmm, +hh:mm or -hh:mm); the time zone is never guessed';
const OFFSET_FORMAT = 'the offset must be Z, +hhmm, -hhmm, +hh:mm or -hh:mm';
const SUB_MS = 'sub-millisecond precision would be lost';
const RANGE = 'out of range: must be from 1970-01-01T00:00:00Z (inclusive) to 2106-01-01T00:00:00Z (exclusive)';

const T = Date.UTC(2024, 0, 2, 3, 4, 5); // 2024-01-02T03:04:05Z
const MINUTE = 60_000;

describe('parseTimestamp accepts', () => {
  it.each<[string, number]>([
    ['2024-01-02T03:04:05Z', T],
    ['2024-01-02T03:04:05+0000', T],
    ['2024-01-02T03:04:05-0000', T],
    ['2024-01-02T03:04:05+00:00', T],
    ['2024-01-02T03:04:05-00:00', T],
    ['2024-01-02T03:04:05+0130', T - 90 * MINUTE],
    ['2024-01-02T03:04:05-0130', T + 90 * MINUTE],
    ['2024-01-02T03:04:05+01:30', T - 90 * MINUTE],
    ['2024-01-02T03:04:05-01:30', T + 90 * MINUTE],
    ['2024-01-02T03:04:05+2359', T - (23 * 60 + 59) * MINUTE],
    ['2024-01-02T03:04:05-23:59', T + (23 * 60 + 59) * MINUTE],
    ['2024-01-02T03:04:05.1Z', T + 100],
    ['2024-01-02T03:04:05.12Z', T + 120],
    ['2024-01-02T03:04:05.123Z', T + 123],
    ['2024-01-02T03:04:05.1230+0000', T + 123],
    ['2024-01-02T03:04:05.123000000-00:00', T + 123],
    ['2024-01-02T03:04:05.000000000Z', T],
    ['2024-01-02T03:04:05.0Z', T],
    ['2024-01-02T03:04:05.999+0100', T + 999 - 60 * MINUTE],
    ['2024-01-01T00:00:00+0000', 1_704_067_200_000],
    ['1970-01-01T00:00:00Z', 0],
    ['1970-01-01T00:00:00.001Z', 1],
    ['1970-01-01T01:00:00+0100', 0],
    ['1969-12-31T23:00:00-0100', 0],
    ['2105-12-31T23:59:59.999Z', 4_291_747_199_999],
    ['2106-01-01T00:59:59+0100', 4_291_747_199_000],
    ['2024-02-29T12:00:00Z', Date.UTC(2024, 1, 29, 12)],
    ['2000-02-29T00:00:00Z', Date.UTC(2000, 1, 29)],
    ['2023-12-31T23:59:59Z', Date.UTC(2023, 11, 31, 23, 59, 59)],
    ['2023-04-30T00:00:00Z', Date.UTC(2023, 3, 30)],
    ['2038-01-19T03:14:08Z', 2_147_483_648_000],
  ])('%s', (text, ms) => {
    expect(parseTimestamp(text)).toEqual({ ok: true, ms });
  });
});

describe('parseTimestamp rejects', () => {
  it.each<[string, string]>([
    // no offset: never guessed
    ['2024-01-02T03:04:05', OFFSET_REQUIRED],
    ['2024-01-02T03:04:05.123', OFFSET_REQUIRED],
    // offsets of another shape
    ['2024-01-02T03:04:05+01', OFFSET_FORMAT],
    ['2024-01-02T03:04:05+013', OFFSET_FORMAT],
    ['2024-01-02T03:04:05+1:30', OFFSET_FORMAT],
    ['2024-01-02T03:04:05+01:3', OFFSET_FORMAT],
    ['2024-01-02T03:04:05+01-30', OFFSET_FORMAT],
    ['2024-01-02T03:04:05+01300', OFFSET_FORMAT],
    ['2024-01-02T03:04:05z', OFFSET_FORMAT],
    ['2024-01-02T03:04:05Z ', OFFSET_FORMAT],
    ['2024-01-02T03:04:05+0000Z', OFFSET_FORMAT],
    ['2024-01-02T03:04:05UTC', OFFSET_FORMAT],
    ['2024-01-02T03:04:05 +0000', OFFSET_FORMAT],
    ['2024-01-02T03:04:05+ab:cd', OFFSET_FORMAT],
    // not the date-time shape
    ['', FORMAT],
    ['abc', FORMAT],
    ['2024-01-02', FORMAT],
    ['2024-01-02T03:04Z', FORMAT],
    ['2024-01-02 03:04:05Z', FORMAT],
    ['2024-01-02t03:04:05Z', FORMAT],
    [' 2024-01-02T03:04:05Z', FORMAT],
    ['2024-1-02T03:04:05Z', FORMAT],
    ['24-01-02T03:04:05Z', FORMAT],
    ['2024/01/02T03:04:05Z', FORMAT],
    ['+2024-01-02T03:04:05Z', FORMAT],
    ['２０２４-01-02T03:04:05Z', FORMAT],
    ['2024-01-02T03:04:05.Z', FORMAT],
    ['2024-01-02T03:04:05.1234567890Z', FORMAT],
    ['2024-01-02T03:04:05,123Z', OFFSET_FORMAT],
    // calendar and clock
    ['2024-00-10T00:00:00Z', 'month 00 is out of range 01-12'],
    ['2024-13-01T00:00:00Z', 'month 13 is out of range 01-12'],
    ['2024-01-00T00:00:00Z', 'day 00 does not exist in 2024-01'],
    ['2024-01-32T00:00:00Z', 'day 32 does not exist in 2024-01'],
    ['2023-02-29T00:00:00Z', 'day 29 does not exist in 2023-02'],
    ['2100-02-29T00:00:00Z', 'day 29 does not exist in 2100-02'],
    ['2024-02-30T00:00:00Z', 'day 30 does not exist in 2024-02'],
    ['2024-04-31T00:00:00Z', 'day 31 does not exist in 2024-04'],
    ['2024-01-02T24:00:00Z', 'hour 24 is out of range 00-23'],
    ['2024-01-02T03:60:00Z', 'minute 60 is out of range 00-59'],
    ['2024-01-02T03:04:60Z', 'second 60 is out of range 00-59'],
    ['2024-01-02T03:04:05+2400', 'offset hour 24 is out of range 00-23'],
    ['2024-01-02T03:04:05-00:60', 'offset minute 60 is out of range 00-59'],
    // precision
    ['2024-01-02T03:04:05.1234Z', SUB_MS],
    ['2024-01-02T03:04:05.000000001Z', SUB_MS],
    ['2024-01-02T03:04:05.123000001+0000', SUB_MS],
    // range
    ['1969-12-31T23:59:59.999Z', RANGE],
    ['1970-01-01T00:00:00+0001', RANGE],
    ['2106-01-01T00:00:00Z', RANGE],
    ['2106-01-01T00:00:00+0000', RANGE],
    ['2105-12-31T23:59:59-0001', RANGE],
    ['0000-01-01T00:00:00Z', RANGE],
    ['9999-12-31T23:59:59Z', RANGE],
  ])('%j', (text, reason) => {
    expect(parseTimestamp(text)).toEqual({ ok: false, reason });
  });
});

describe('formatTimestamp', () => {
  it.each<[number, string]>([
    [0, '1970-01-01T00:00:00+0000'],
    [1, '1970-01-01T00:00:00.001+0000'],
    [T, '2024-01-02T03:04:05+0000'],
    [T + 120, '2024-01-02T03:04:05.120+0000'],
    [T + 7, '2024-01-02T03:04:05.007+0000'],
    [T + 999, '2024-01-02T03:04:05.999+0000'],
    [Date.UTC(2024, 1, 29, 23, 59, 59), '2024-02-29T23:59:59+0000'],
    [4_291_747_199_999, '2105-12-31T23:59:59.999+0000'],
  ])('%d → %s', (ms, text) => {
    expect(formatTimestamp(ms)).toBe(text);
  });

  it('round-trips through parseTimestamp', () => {
    const step = Math.floor((END_TIMESTAMP_MS - MIN_TIMESTAMP_MS) / 9973);
    for (let ms = MIN_TIMESTAMP_MS; ms < END_TIMESTAMP_MS; ms += step) {
      expect(parseTimestamp(formatTimestamp(ms))).toEqual({ ok: true, ms });
      const whole = ms - (ms % 1000);
      expect(parseTimestamp(formatTimestamp(whole))).toEqual({ ok: true, ms: whole });
    }
  });

  it.each([-1, END_TIMESTAMP_MS, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('throws a RangeError for %d', (ms) => {
    expect(() => formatTimestamp(ms)).toThrow(RangeError);
  });
});

describe('TimestampReader', () => {
  it('reads a range of a larger text, never past its end', () => {
    const reader = new TimestampReader();
    const text = 'x,2024-01-02T03:04:05.12,3Z,2024-01-02T03:04:05Z9';
    expect(reader.read(text, 2, 24)).toBe(-1);
    expect(reader.reason).toBe(OFFSET_REQUIRED);
    expect(reader.read(text, 28, 48)).toBe(T);
    expect(reader.read(text, 28, 47)).toBe(-1);
    expect(reader.reason).toBe(OFFSET_REQUIRED);
    expect(reader.read(text, 28, 49)).toBe(-1);
    expect(reader.reason).toBe(OFFSET_FORMAT);
  });

  it('gives, with its cached date, what a fresh reader gives for each timestamp', () => {
    const sequence = [
      '2024-01-02T03:04:05Z',
      '2024-01-02T03:04:06+0100',
      '2024-01-02T23:59:59.999Z',
      '2024-01-02T24:00:00Z',
      '2024-01-02T00:60:00Z',
      '2024-01-02T00:00:60Z',
      '2024-01-02 00:00:00Z',
      '2024-01-02T00:00:00',
      '2024-01-02T00:00:00.0001Z',
      '2024-01-02T00:00:00+2400',
      '2024-01-03T00:00:00Z',
      '2024-02-30T00:00:00Z',
      '2024-02-30T00:00:01Z',
      '2024-13-01T00:00:00Z',
      '2024-01-03T00:00:01Z',
      '1970-01-01T00:00:00+0001',
      '1970-01-01T00:00:00Z',
      '2105-12-31T23:59:59Z',
      '2105-12-31T23:59:59-0001',
    ];
    const cached = new TimestampReader();
    for (const text of sequence) {
      const fresh = new TimestampReader();
      const expected = fresh.read(text, 0, text.length);
      expect(cached.read(text, 0, text.length), text).toBe(expected);
      if (expected < 0) expect(cached.reason, text).toBe(fresh.reason);
      else expect(expected, text).toBe(Date.parse(text.replace(/([+-]\d\d)(\d\d)$/, '$1:$2')));
    }
  });
});
