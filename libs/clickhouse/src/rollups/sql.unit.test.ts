import { describe, expect, it } from 'vitest';
import { bucketRange, dedupedBucketsSql, rollupPageSql, rollupStatesSql } from './sql.ts';

describe('rollup SQL', () => {
  it('reads every bucket overlapping the range, whole', () => {
    expect(bucketRange('1m', 60_000, 119_999)).toEqual({ first: 60_000, last: 60_000 });
    expect(bucketRange('1m', 60_001, 120_000)).toEqual({ first: 60_000, last: 120_000 });
    expect(bucketRange('1h', 0, 3_600_000 * 24 - 1)).toEqual({ first: 0, last: 3_600_000 * 23 });
  });

  it('continues strictly after the cursor, the name from an external table, never in the text', () => {
    const sql = rollupPageSql('1h', 0, 3_600_000, { metric_name: "x') OR 1 --", bucket: 3_600_000 }, 11);
    expect(sql).not.toContain("x')");
    expect(sql).toContain('(metric_name > (SELECT any(name) FROM after_name) OR (metric_name = (SELECT any(name) FROM after_name) AND bucket > 3600000))');
    expect(sql).toMatch(/FROM points_1h WHERE .* LIMIT 11 FORMAT TabSeparated$/);
    expect(rollupPageSql('1m', 0, 0, null, 1)).not.toContain('after_name');
  });

  it('takes only checked numbers and table names', () => {
    expect(() => rollupPageSql('1m', 0.5, 1, null, 1)).toThrow(/safe integer/);
    expect(() => dedupedBucketsSql('1m', 0, 1, 'points; DROP TABLE x')).toThrow(/not a points table/);
    expect(() => rollupStatesSql('1h', 'points_g2_stage_x')).not.toThrow();
  });

  it('computes dirty buckets from the newest row of each timestamp, within the buckets asked for', () => {
    const sql = dedupedBucketsSql('1m', 60_000, 120_000);
    expect(sql).toContain('argMax(value, tuple(updated_at, kafka_partition, kafka_offset, row_in_batch))');
    expect(sql).toContain('ts >= 60000 AND ts < 180000');
    expect(sql).toContain('IN (SELECT name, bucket FROM buckets)');
  });
});
