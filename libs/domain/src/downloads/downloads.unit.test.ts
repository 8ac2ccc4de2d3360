import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors.ts';
import { parseDateBound, parseDownloadParams } from './params.ts';
import { resolveMetricNames } from './resolve.ts';

const fieldsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as DomainError).errors.map((x) => x.field);
  }
  return [];
};

describe('download parameters', () => {
  it('applies the seed defaults', () => {
    expect(parseDownloadParams({ metrics: 'cpu' }, { maxRowsCeiling: 10_000_000, maxListNames: 5, maxRollupRows: 100_000 })).toEqual({
      metrics: 'cpu',
      pattern: 'single',
      fromMs: 0,
      toMs: 4_291_747_199_999,
      maxRows: 1000,
      format: 'csv',
      latestOnly: false,
      resolution: 'raw',
      cursor: null,
    });
  });

  it('takes a resolution of raw, 1m or 1h, and bounds a rollup page by MERIDIAN_MAX_ROLLUP_ROWS', () => {
    const limits = { maxRowsCeiling: 10_000_000, maxListNames: 5, maxRollupRows: 500 };
    expect(parseDownloadParams({ metrics: 'cpu', resolution: '1h', max_rows: '500' }, limits)).toMatchObject({ resolution: '1h', maxRows: 500 });
    expect(parseDownloadParams({ metrics: 'cpu', resolution: 'raw', max_rows: '501' }, limits)).toMatchObject({ resolution: 'raw', maxRows: 501 });
    expect(() => parseDownloadParams({ metrics: 'cpu', resolution: '1m', max_rows: '501' }, limits)).toThrow(/MERIDIAN_MAX_ROLLUP_ROWS/);
    expect(() => parseDownloadParams({ metrics: 'cpu', resolution: '5m' }, limits)).toThrow(/resolution must be one of raw, 1m, 1h/);
  });

  it.each([
    ['2024-01-02', 'start', Date.UTC(2024, 0, 2)],
    ['2024-01-02', 'end', Date.UTC(2024, 0, 3) - 1],
    ['2024-01-02T03:04:05Z', 'start', Date.UTC(2024, 0, 2, 3, 4, 5)],
    ['2024-01-02T03:04:05+01:00', 'end', Date.UTC(2024, 0, 2, 2, 4, 5)],
    ['2024-01-02T03:04:05+0100', 'end', Date.UTC(2024, 0, 2, 2, 4, 5)],
    ['2024-01-02T03:04:05.250-0030', 'start', Date.UTC(2024, 0, 2, 3, 34, 5, 250)],
  ] as const)('reads %s as a %s bound', (text, bound, ms) => {
    expect(parseDateBound(text, bound)).toEqual({ ok: true, ms });
  });

  it.each(['2024-02-30', '2024-13-01', 'yesterday', '2024-01-02T03:04:05', '1969-12-31'])('rejects the date %s', (text) => {
    expect(parseDateBound(text, 'start').ok).toBe(false);
  });

  it('takes format as an alias of file_format, and both when they agree', () => {
    expect(parseDownloadParams({ metrics: 'm', format: 'json' }, { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 }).format).toBe('json');
    expect(
      parseDownloadParams({ metrics: 'm', file_format: 'json', format: 'json' }, { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 }).format,
    ).toBe('json');
    expect(
      fieldsOf(() =>
        parseDownloadParams({ metrics: 'm', file_format: 'csv', format: 'json' }, { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 }),
      ),
    ).toEqual(['format']);
  });

  it('names every bad parameter at once', () => {
    expect(
      fieldsOf(() =>
        parseDownloadParams(
          { pattern: 'glob', start_date: 'x', max_rows: '0', format: 'xml', latest_only: 'yes' },
          { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 },
        ),
      ),
    ).toEqual(['metrics', 'pattern', 'start_date', 'max_rows', 'format', 'latest_only']);
    expect(
      fieldsOf(() =>
        parseDownloadParams(
          { metrics: 'm', start_date: '2024-02-02', end_date: '2024-02-01' },
          { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 },
        ),
      ),
    ).toEqual(['start_date']);
    expect(fieldsOf(() => parseDownloadParams({ metrics: 'm', max_rows: '1.5' }, { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 }))).toEqual([
      'max_rows',
    ]);
    expect(fieldsOf(() => parseDownloadParams({ metrics: ['a', 'b'] }, { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 }))).toEqual([
      'metrics',
      'metrics',
    ]);
  });

  it('caps the names of a list (MERIDIAN_MAX_DOWNLOAD_NAMES), counted before any lookup', () => {
    const limits = { maxRowsCeiling: 10, maxListNames: 3, maxRollupRows: 100_000 };
    expect(parseDownloadParams({ metrics: 'a,b,c', pattern: 'list' }, limits).metrics).toBe('a,b,c');
    expect(fieldsOf(() => parseDownloadParams({ metrics: 'a,b,c,d', pattern: 'list' }, limits))).toEqual(['metrics']);
    // Only a list is a list of names: commas in a substring pattern's text are no names.
    expect(parseDownloadParams({ metrics: 'a,b,c,d', pattern: 'contains' }, limits).pattern).toBe('contains');
  });

  it('says the ceiling when max_rows is above it', () => {
    try {
      parseDownloadParams({ metrics: 'm', max_rows: '11' }, { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 });
      expect.unreachable();
    } catch (e) {
      expect((e as DomainError).errors[0]!.reason).toMatch(/at most 10/);
    }
  });

  it('says the range a bad value must be in, whatever its size', () => {
    const reasons = (query: Record<string, string>) => {
      try {
        parseDownloadParams({ metrics: 'm', ...query }, { maxRowsCeiling: 10, maxListNames: 5, maxRollupRows: 100_000 });
      } catch (e) {
        return (e as DomainError).errors.map((x) => `${x.field}: ${x.reason}`);
      }
      return [];
    };
    // Years 0 to 99 are years, not 1900 to 1999: outside the range, not "not a calendar date".
    expect(reasons({ start_date: '0001-01-01' })).toEqual(['start_date: outside 1970-01-01 to 2105-12-31']);
    expect(reasons({ end_date: '0099-12-31' })).toEqual(['end_date: outside 1970-01-01 to 2105-12-31']);
    expect(reasons({ start_date: '2023-02-29' })).toEqual(['start_date: not a calendar date']);
    expect(reasons({ max_rows: '1000000000000' })).toEqual(['max_rows: must be at most 10; page through larger results with the cursor']);
    expect(reasons({ max_rows: '0' })).toEqual(['max_rows: must be a whole number from 1 to 10']);
    expect(reasons({ max_rows: '-5' })).toEqual(['max_rows: must be a whole number from 1 to 10']);
  });
});

describe('pattern resolution', () => {
  const catalog = ['cpu:a', 'cpu:b', 'mem:a', 'secret:a', 'x,y'.replace(',', '_')];
  const canRead = (n: string) => !n.startsWith('secret');

  it('single and list name readable metrics exactly', () => {
    expect(resolveMetricNames('single', 'cpu:a', catalog, canRead)).toEqual(['cpu:a']);
    expect(resolveMetricNames('list', 'mem:a,cpu:b,mem:a', catalog, canRead)).toEqual(['cpu:b', 'mem:a']);
  });

  it('gives one identical 404 for a missing metric and one the caller may not read', () => {
    const missing = () => resolveMetricNames('single', 'nope', catalog, canRead);
    const hidden = () => resolveMetricNames('single', 'secret:a', catalog, canRead);
    expect(missing).toThrow(DomainError);
    let a: DomainError | undefined;
    let b: DomainError | undefined;
    try {
      missing();
    } catch (e) {
      a = e as DomainError;
    }
    try {
      hidden();
    } catch (e) {
      b = e as DomainError;
    }
    expect([a!.code, a!.message]).toEqual([b!.code, b!.message]);
    expect(() => resolveMetricNames('list', 'cpu:a,secret:a', catalog, canRead)).toThrow(/no such metric/);
    expect(() => resolveMetricNames('list', 'cpu:a,', catalog, canRead)).toThrow(/no such metric/);
  });

  it('substring patterns see only readable metrics and may match none', () => {
    expect(resolveMetricNames('contains', ':a', catalog, canRead)).toEqual(['cpu:a', 'mem:a']);
    expect(resolveMetricNames('starts_with', 'cpu', catalog, canRead)).toEqual(['cpu:a', 'cpu:b']);
    expect(resolveMetricNames('ends_with', 'b', catalog, canRead)).toEqual(['cpu:b']);
    expect(resolveMetricNames('starts_with', 'secret', catalog, canRead)).toEqual([]);
  });

  it('orders names by bytes, as ClickHouse does', () => {
    expect(resolveMetricNames('contains', '', ['é', 'z', 'A'], () => true)).toEqual(['A', 'z', 'é']);
  });
});
