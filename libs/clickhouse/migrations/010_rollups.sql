-- Rollups: per metric, per minute (points_1m) and per hour (points_1h), the states of min, max,
-- sum, count and last of the points, kept by the server as points arrive (a view on points,
-- written by the same INSERT, as the catalog of migration 002). Buckets start at
-- intDiv(ts, step) * step, epoch milliseconds aligned to the epoch.
--
-- points keeps every row uploaded: a (metric_name, ts) uploaded again has a second row with a
-- newer updated_at, and the deduplicated points are the newest row of each (metric_name, ts).
-- A view sees one INSERT block and cannot retract a replaced row, so besides the aggregates of
-- every row it keeps `timestamps`, the distinct timestamps of the bucket: where countMerge(rows)
-- equals uniqExactMerge(timestamps) no timestamp is repeated and the aggregates of every row are
-- those of the deduplicated points; a bucket where they differ is answered from points, with the
-- newest row of each timestamp (libs/clickhouse/src/rollups). `last` is the value at the greatest
-- timestamp: one row has it in a bucket where no timestamp repeats, and the other buckets are
-- computed again anyway (argMax by ts alone: a tuple of the row's version as the key measured
-- 1.5 times the insert cost of the other states). Read with the -Merge combinators, grouped.
--
-- The views cost at insert: on 18.16, a million points into points take several times the CPU
-- they take without views (docs/benchmarks.md, bench-rollups); uniqExact is the price of exact
-- answers under replaced points.
-- No POPULATE, as for the catalog: a database holding points from before this migration gets its
-- rollups with `meridian replay rebuild points` (or the backfill statements of the docs).
CREATE MATERIALIZED VIEW IF NOT EXISTS points_1m
ENGINE = AggregatingMergeTree()
ORDER BY (metric_name, bucket)
AS SELECT
  metric_name,
  intDiv(ts, 60000) * 60000 AS bucket,
  countState() AS rows,
  uniqExactState(ts) AS timestamps,
  minState(value) AS min_value,
  maxState(value) AS max_value,
  sumState(value) AS sum_value,
  argMaxState(value, ts) AS last_value
FROM points
GROUP BY metric_name, bucket
;
CREATE MATERIALIZED VIEW IF NOT EXISTS points_1h
ENGINE = AggregatingMergeTree()
ORDER BY (metric_name, bucket)
AS SELECT
  metric_name,
  intDiv(ts, 3600000) * 3600000 AS bucket,
  countState() AS rows,
  uniqExactState(ts) AS timestamps,
  minState(value) AS min_value,
  maxState(value) AS max_value,
  sumState(value) AS sum_value,
  argMaxState(value, ts) AS last_value
FROM points
GROUP BY metric_name, bucket
;
-- The insert tokens of migration 004, for the same reason: a retried block dropped by points must
-- not be aggregated twice here (only where the server takes the setting; see statementsFor).
ALTER TABLE points_1m MODIFY SETTING non_replicated_deduplication_window = 1000
;
ALTER TABLE points_1h MODIFY SETTING non_replicated_deduplication_window = 1000
;
