import { describe, expect, it } from 'vitest';
import { decodeRollupCursor, encodeRollupCursor, rollupCsv, rollupJson } from './rollup-body.ts';

const row = { metric_name: 'a,b"c', bucket: Date.UTC(2024, 0, 1, 1), count: 3, min: -1.5, max: 1e21, sum: 0.1 + 0.2, avg: 0.1, last: 2 };

describe('rollup download bodies', () => {
  it('CSV: the header, names quoted as a raw download quotes them, buckets as UTC timestamps, shortest numbers', () => {
    expect(rollupCsv([row])).toBe('metric_name,bucket,count,min,max,sum,avg,last\n"a,b""c",2024-01-01T01:00:00+0000,3,-1.5,1e+21,0.30000000000000004,0.1,2\n');
    expect(rollupCsv([])).toBe('metric_name,bucket,count,min,max,sum,avg,last\n');
  });

  it('JSON: an array of objects with the same eight fields', () => {
    expect(JSON.parse(rollupJson([row]))).toEqual([
      { metric_name: 'a,b"c', bucket: '2024-01-01T01:00:00+0000', count: 3, min: -1.5, max: 1e21, sum: 0.30000000000000004, avg: 0.1, last: 2 },
    ]);
    expect(rollupJson([])).toBe('[]');
  });

  it('a cursor reads back as the bucket it names, and nothing else reads as one', () => {
    expect(decodeRollupCursor(encodeRollupCursor({ metric_name: 'x', bucket: 60_000 }))).toEqual({ metric_name: 'x', bucket: 60_000 });
    for (const other of ['', 'null', '["rollup","x",1.5]', '{"metric_name":"x"}', '["raw","x",1]']) expect(decodeRollupCursor(other)).toBeNull();
  });
});
