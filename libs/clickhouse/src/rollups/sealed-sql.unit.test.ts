import { describe, expect, it } from 'vitest';
import { insertDedupedSealsSql, insertMergedSealsSql, sealCandidatesSql, sealedPageSql, sealTotalsSql } from './sealed-sql.ts';
import { bucketSpan } from './sql.ts';

describe('sealed rollup SQL', () => {
  it('joins the seals at the bucket count and marks, without the exactness check, the cursor name from an external table', () => {
    const sql = sealedPageSql('1h', 0, 3_600_000, { metric_name: "x') OR 1 --", bucket: 3_600_000 }, 11);
    expect(sql).not.toContain("x')");
    expect(sql).not.toContain('uniqExactMerge');
    expect(sql).toContain('FROM points_1h WHERE');
    expect(sql).toContain('FROM points_1h_sealed WHERE');
    expect(sql).toContain('USING (metric_name, bucket, n, m)');
    // The counted marks of the page's metrics and days only (a row per metric and day), joined after the page's LIMIT.
    expect(sql).toContain(
      "FROM rollup_mark_counts WHERE metric_name != '' AND metric_name IN (SELECT name FROM names) AND period >= 0 AND period <= 0 GROUP BY metric_name, period",
    );
    expect(sql).toMatch(/LIMIT 11\)\) AS b ANY LEFT JOIN \(SELECT metric_name, period, sum\(n\) AS in_day/);
    expect(sql).toContain('USING (metric_name, period)');
    expect(sql).not.toContain('groupArray');
  });

  it('a pass looks at closed buckets only, at most its bound', () => {
    expect(sealTotalsSql('1m', 120_000)).toContain('bucket < 120000');
    expect(sealCandidatesSql('1h', 7_200_000, 25)).toMatch(/bucket < 7200000 .*WHERE sealed = 0 ORDER BY metric_name, bucket LIMIT 25 FORMAT TabSeparated$/);
    // Seals are found at their count and marks; those marked since count for nothing.
    expect(sealCandidatesSql('1h', 7_200_000, 25)).toContain('USING (metric_name, bucket, n, m)');
    expect(sealTotalsSql('1h', 7_200_000)).toContain('WHERE marks = m');
    expect(() => sealCandidatesSql('1h', 0.5, 1)).toThrow(/safe integer/);
  });

  it('writes seals only where the count is still the one read, from checked table names', () => {
    expect(insertMergedSealsSql('1m', 0, 60_000)).toContain('USING (metric_name, bucket, n)');
    expect(insertMergedSealsSql('1m', 0, 60_000)).toMatch(/^INSERT INTO points_1m_sealed \(.*, marks\) SELECT .*, marks FROM/);
    expect(insertMergedSealsSql('1m', 0, 60_000, { source: 'points' })).toContain('NOT IN (SELECT metric_name, intDiv(ts, 60000) * 60000 FROM points');
    expect(() => insertMergedSealsSql('1m', 0, 1, { source: 'points; DROP TABLE x' })).toThrow(/not a points table/);
    expect(() => insertDedupedSealsSql('1h', 0, 1, 'points x')).toThrow(/not a points table/);
  });

  it("finds a page's first and last bucket without spreading it", () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => ({ bucket: (i % 1000) * 60_000 }));
    expect(bucketSpan(rows)).toEqual([0, 999 * 60_000]);
  });
});
