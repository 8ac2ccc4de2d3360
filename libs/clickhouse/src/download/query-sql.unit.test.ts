import { describe, expect, it } from 'vitest';
import { filterSql, type FilterInput } from './filter-sql.ts';
import { boundaryInMetricSql, countPerMetricSql, countSql, streamSql } from './query-sql.ts';
import type { DownloadCursor } from './types.ts';

const evil = "x'); DROP TABLE points; --";
const cursor = (metric_name: string, ts = 5): DownloadCursor => ({ metric_name, ts, updated_at: 6, partition: 1, offset: 2, row: 3 });
const input: FilterInput = { metricNames: [evil, 'a\\b"c'], fromMs: 100, toMs: 200, latestOnly: false, after: null, until: null };

describe('download filter', () => {
  it('never puts a name into SQL text: names travel as external tables', () => {
    const f = filterSql({ ...input, after: cursor(`${evil}1`), until: cursor(`${evil}2`) });
    expect(f.where).not.toContain('DROP');
    expect(f.where).not.toContain('a\\b');
    expect(f.tables.map((t) => [t.name, t.rows])).toEqual([
      ['names', [[evil], ['a\\b"c']]],
      ['after_name', [[`${evil}1`]]],
      ['until_name', [[`${evil}2`]]],
    ]);
  });

  it('bounds ts inclusively and needs no cursor tables without cursors', () => {
    const f = filterSql(input);
    expect(f.where).toBe('metric_name IN (SELECT name FROM names) AND ts >= 100 AND ts <= 200');
    expect(f.tables).toHaveLength(1);
  });

  it('continues strictly after the full key, and ends at the planned key inclusively', () => {
    const f = filterSql({ ...input, after: cursor('m', 5), until: cursor('n', 9) });
    expect(f.where).toContain(
      '(metric_name > (SELECT any(name) FROM after_name) OR (metric_name = (SELECT any(name) FROM after_name) AND ts >= 5 AND (ts, updated_at, kafka_partition, kafka_offset, row_in_batch) > (5, 6, 1, 2, 3)))',
    );
    expect(f.where).toContain(
      '(metric_name < (SELECT any(name) FROM until_name) OR (metric_name = (SELECT any(name) FROM until_name) AND ts <= 9 AND (ts, updated_at, kafka_partition, kafka_offset, row_in_batch) <= (9, 6, 1, 2, 3)))',
    );
  });

  it('with latestOnly compares (metric_name, ts) only: one row stands for all rows of its ts', () => {
    const f = filterSql({ ...input, latestOnly: true, after: cursor('m', 5), until: cursor('n', 9) });
    expect(f.where).toContain('(metric_name = (SELECT any(name) FROM after_name) AND ts > 5)');
    expect(f.where).toContain('(metric_name = (SELECT any(name) FROM until_name) AND ts <= 9)');
  });

  it('refuses numbers that are not safe integers', () => {
    expect(() => filterSql({ ...input, fromMs: Number.NaN })).toThrow(TypeError);
    expect(() => filterSql({ ...input, toMs: 1.5 })).toThrow(TypeError);
    expect(() => filterSql({ ...input, after: { ...cursor('m'), offset: 2 ** 64 } })).toThrow(TypeError);
  });
});

describe('download queries', () => {
  const where = filterSql({ ...input, after: cursor('m'), until: cursor('n') }).where;
  const all = [
    ...(['csv', 'json'] as const).flatMap((format) =>
      [false, true].flatMap((latestOnly) => [null, 1000].map((limit) => streamSql(format, latestOnly, where, limit))),
    ),
    countSql(where),
    countPerMetricSql(true, where),
    boundaryInMetricSql(true, where, 10),
  ];

  it('use nothing 18.16 lacks or current releases changed', () => {
    for (const sql of all) {
      expect(sql).not.toMatch(/formatDateTime|DateTime64|CODEC|param_|\{\w+:\w+\}/);
    }
  });

  it('fit in the request line ClickHouse accepts (about 16 KiB, URL-encoded)', () => {
    for (const sql of all) expect(new URLSearchParams({ query: sql }).toString().length).toBeLessThan(8_000);
  });

  it('stream the rows in key order, the newest of each (metric_name, ts) with latestOnly', () => {
    expect(streamSql('csv', false, where, null)).toContain(
      'ORDER BY rank, ts, updated_at, kafka_partition, kafka_offset, row_in_batch) FORMAT TabSeparatedRaw',
    );
    expect(streamSql('csv', true, where, null)).toContain(
      'ORDER BY rank, ts, updated_at DESC, kafka_partition DESC, kafka_offset DESC, row_in_batch DESC LIMIT 1 BY rank, ts)',
    );
    expect(streamSql('json', false, where, 25)).toContain('LIMIT 25)');
  });

  it('find the boundary by a 1-based position', () => {
    expect(boundaryInMetricSql(false, where, 1)).toContain('LIMIT 0, 1 ');
    expect(() => boundaryInMetricSql(false, where, 0)).toThrow(RangeError);
  });
});
