import { describe, expect, it } from 'vitest';
import { parseSamples, samplesSql } from './samples.ts';

describe('PromQL samples', () => {
  it('reads the names from the external table only, the window and the sparse steps as numbers', () => {
    const sql = samplesSql({ fromMs: 1000, toMs: 5000, sparse: { firstRefMs: 2000, stepMs: 600, widthMs: 100 } });
    expect(sql).toContain('metric_name IN (SELECT name FROM names) AND ts >= 1000 AND ts <= 5000');
    expect(sql).toContain('((2000 - ts) % 600 + 600) % 600 <= 100');
    // Deduplicated in each series' arrays: the newest row of a timestamp by the version tuple.
    expect(sql).toContain('arrayEnumerateUniq');
    expect(sql).not.toContain('ORDER BY');
    expect(() => samplesSql({ fromMs: 0.5, toMs: 1, sparse: null })).toThrow(TypeError);
  });

  it('parses arrays, special floats and escaped names, and sorts by time', () => {
    const rows = parseSamples('m{a="x\\ty"}\t[3000,1000,2000]\t[3,nan,-inf]\nn\t[5]\t[1e-7]\n');
    expect(rows).toEqual([
      { name: 'm{a="x\ty"}', ts: [1000, 2000, 3000], vs: [Number.NaN, Number.NEGATIVE_INFINITY, 3] },
      { name: 'n', ts: [5], vs: [1e-7] },
    ]);
  });
});

describe('PromQL windows reduced in ClickHouse', () => {
  it('joins each sample to the steps whose windows hold it, clipped to the query, with only numbers in the SQL', async () => {
    const { windowStatsSql } = await import('./window-stats.ts');
    // A range between steps: sample by sample.
    const sql = windowStatsSql({ fromMs: 0, toMs: 3_600_000, sparse: null, reduce: { firstRefMs: 300_000, stepMs: 60_000, steps: 56, rangeMs: 330_000 } });
    // Shifted 6 steps (ceil(5 min / 1 min) + 1) so intDiv, which truncates, sees positive numerators.
    expect(sql).toContain('greatest(intDiv(ts - 300000 + 420000 + 60000 - 1, 60000) - 7, 0) AS kmin');
    expect(sql).toContain('least(intDiv(ts - 300000 + 420000 + 330000, 60000) - 7, 55) AS kmax');
    expect(sql).toContain('metric_name IN (SELECT name FROM names)');
    expect(sql).toContain('GROUP BY sid, k');
  });

  it('groups by step first when the range is whole steps, then joins each step to the windows holding it', async () => {
    const { windowStatsSql } = await import('./window-stats.ts');
    const sql = windowStatsSql({ fromMs: 0, toMs: 3_600_000, sparse: null, reduce: { firstRefMs: 300_000, stepMs: 60_000, steps: 56, rangeMs: 300_000 } });
    // Bucket j holds F + (j − 1)·step < ts ≤ F + j·step; window k the buckets k − 4 … k and the edge sample of bucket k − 5.
    expect(sql).toContain('intDiv(ts - 300000 + 360000 + 60000 - 1, 60000) - 6 AS j');
    expect(sql).toContain('GROUP BY sid, j');
    expect(sql).toContain('k < j + 5 AS whole');
    expect(sql).toContain('WHERE whole OR bt1 = 300000 + j * 60000 GROUP BY sid, k');
  });
});
