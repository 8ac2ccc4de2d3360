import { queryText, ROLLUPS, type ConnOptions, type Resolution, type RollupRow } from '@meridian/clickhouse';

/** The reference: the deduplicated points (downloads' LIMIT 1 BY), aggregated per bucket by a plain query. */
function referenceSql(stepMs: number, table: string): string {
  const latest = `SELECT metric_name, ts, value FROM ${table} ORDER BY metric_name, ts, updated_at DESC, kafka_partition DESC, kafka_offset DESC, row_in_batch DESC LIMIT 1 BY metric_name, ts`;
  return (
    `SELECT metric_name, intDiv(ts, ${stepMs}) * ${stepMs} AS bucket, count() AS n, min(value) AS lo, max(value) AS hi, sum(value) AS total, argMax(value, ts) AS last ` +
    `FROM (${latest}) GROUP BY metric_name, bucket ORDER BY metric_name, bucket FORMAT JSONEachRow`
  );
}

/** Every bucket of a resolution as readRollupPage answers it, computed from the raw points of `table` alone. */
export async function referenceRollups(conn: ConnOptions, resolution: Resolution, table = 'points'): Promise<RollupRow[]> {
  const text = await queryText(conn, { sql: referenceSql(ROLLUPS[resolution].stepMs, table) });
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const r = JSON.parse(l) as { metric_name: string; bucket: string | number; n: string | number; lo: number; hi: number; total: number; last: number };
      return {
        metric_name: r.metric_name,
        bucket: Number(r.bucket),
        count: Number(r.n),
        min: r.lo,
        max: r.hi,
        sum: r.total,
        avg: r.total / Number(r.n),
        last: r.last,
      };
    });
}

/** A rollup table's buckets, every aggregate printed as text (migration 010): equal dumps, equal rollups. */
export const rollupDumpSql = (table: string) =>
  `SELECT metric_name, toString(bucket) AS b, toString(countMerge(rows)) AS n, toString(uniqExactMerge(timestamps)) AS d, toString(minMerge(min_value)) AS lo, toString(maxMerge(max_value)) AS hi, toString(sumMerge(sum_value)) AS s, toString(argMaxMerge(last_value)) AS last FROM ${table} GROUP BY metric_name, bucket ORDER BY metric_name, bucket`;
