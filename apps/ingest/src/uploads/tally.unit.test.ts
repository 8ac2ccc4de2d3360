import { describe, expect, it } from 'vitest';
import { MAX_REPORTED_ERRORS, UploadTally } from './tally.ts';

describe('UploadTally', () => {
  it('counts a row with several errors once, and points beside it', () => {
    const tally = new UploadTally();
    tally.point();
    tally.error(2, 'timestamp', 'bad');
    tally.error(2, 'value', 'bad');
    tally.point();
    tally.error(5, 'value', 'bad');
    expect(tally.rejected).toBe(2);
    expect(tally.rowsTotal).toBe(4);
    expect(tally.errors).toHaveLength(3);
    expect(tally.failureReason()).toBe('2 invalid rows: nothing was stored');
  });

  it('keeps the first errors and counts the rest in a last line', () => {
    const tally = new UploadTally();
    for (let row = 1; row <= MAX_REPORTED_ERRORS + 3; row++) tally.error(row, 'value', 'bad');
    const report = tally.report();
    expect(report).toHaveLength(MAX_REPORTED_ERRORS + 1);
    expect(report.at(-1)).toEqual({ row: -1, column: 'row', reason: '3 more errors not shown' });
    expect(tally.rejected).toBe(MAX_REPORTED_ERRORS + 3);
  });

  it('says when reading stopped early: the counts are a floor', () => {
    const tally = new UploadTally();
    for (let row = 1; !tally.shouldStopReading; row++) tally.error(row * 2, 'value', 'bad');
    tally.stopReading();
    expect(tally.failureReason()).toBe(`reading stopped after row ${MAX_REPORTED_ERRORS * 2}, at the first ${MAX_REPORTED_ERRORS} errors: at least ${MAX_REPORTED_ERRORS} invalid rows; nothing was stored`);
  });

  it('an error of the whole upload (row 0) is fatal and not a rejected row', () => {
    const tally = new UploadTally();
    tally.error(0, 'metric_name', 'required');
    expect(tally.hasFatal).toBe(true);
    expect(tally.rejected).toBe(0);
    expect(tally.failureReason()).toBe('the upload cannot be read: metric_name: required; nothing was stored');
    tally.error(0, 'row', 'a second one');
    expect(tally.failureReason()).toBe('the upload cannot be read: metric_name: required; nothing was stored');
  });

  it('holds no per-row state: a million rejected rows cost what one does', () => {
    const tally = new UploadTally();
    const before = process.memoryUsage().heapUsed;
    for (let row = 1; row <= 1_000_000; row++) tally.error(row, 'value', 'bad');
    expect(tally.rejected).toBe(1_000_000);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(8 * 1024 * 1024);
  });

  it('refuses errors out of row order, which would miscount', () => {
    const tally = new UploadTally();
    tally.error(3, 'value', 'bad');
    expect(() => tally.error(2, 'value', 'bad')).toThrow(/row order/);
  });
});
