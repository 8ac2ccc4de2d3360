import { describe, expect, it } from 'vitest';
import { MARK_PERIOD_MS, MAX_MARK_ROWS, MAX_MARKED_PERIODS, periodOf } from './marks-sql.ts';
import { markedBucketsWhere, markedPeriods } from './marks.ts';

describe('the days a deletion marks', () => {
  const DAY = MARK_PERIOD_MS;

  it('are the days of the buckets it rewrites, a bucket in one day, rounded towards zero as intDiv does', () => {
    expect(markedPeriods(10 * DAY + 5, 10 * DAY + 6, 1)).toEqual({ first: 10, last: 10 });
    // The last millisecond of a day rewrites the day's last minute and hour only.
    expect(markedPeriods(10 * DAY - 1, 12 * DAY, 1)).toEqual({ first: 9, last: 12 });
    expect(periodOf(-1)).toBe(0);
    expect(periodOf(-DAY)).toBe(-1);
  });

  it('are bounded: a range over more days than the bound marks its metrics once (every bucket)', () => {
    expect(markedPeriods(0, MAX_MARKED_PERIODS * DAY - 1, 1)).toEqual({ first: 0, last: MAX_MARKED_PERIODS - 1 });
    expect(markedPeriods(0, MAX_MARKED_PERIODS * DAY, 1)).toBeNull();
    expect(markedPeriods(0, 2 ** 52, 1)).toBeNull();
    expect(markedBucketsWhere(0, 2 ** 52, 1)).toBe('1');
    expect(markedBucketsWhere(DAY, DAY + 1, 1)).toBe(`intDiv(bucket, ${DAY}) >= 1 AND intDiv(bucket, ${DAY}) <= 1 AND bucket > 0 AND bucket < ${2 * DAY}`);
  });

  it('are bounded in rows too: metrics times days past the bound mark each metric once (every bucket)', () => {
    const tenDays = [0, 10 * DAY - 1] as const;
    expect(markedPeriods(...tenDays, MAX_MARK_ROWS / 10)).toEqual({ first: 0, last: 9 });
    expect(markedPeriods(...tenDays, MAX_MARK_ROWS / 10 + 1)).toBeNull();
    expect(markedBucketsWhere(...tenDays, MAX_MARK_ROWS / 10 + 1)).toBe('1');
  });
});
