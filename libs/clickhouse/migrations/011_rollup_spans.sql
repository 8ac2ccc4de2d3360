-- Spans of the rollups: per insert block and per (metric, bucket) the block touches, one row of
-- the block's earliest and latest timestamp in the bucket, its row count and its distinct
-- timestamps. They let a read tell cheaply that a bucket of points_1m / points_1h (migration 010)
-- holds no replaced point, without merging its `timestamps` states (a year of 10M points at 1h
-- spent nearly all of its seconds there; docs/benchmarks.md, bench-rollups):
--
--   a bucket is clean when its spans count as many rows as its rollup does, every span's rows
--   have distinct timestamps, and the spans, sorted, do not overlap.
--
-- Two rows of one (metric, ts) in a bucket are then impossible: in one block the span's distinct
-- count would fall short of its rows; in two blocks both spans hold ts and overlap. Any other
-- bucket (overlapping spans, a block lost by a crash before its views ran, rows from before this
-- migration: then the spans count fewer rows than the rollup) is computed from points, or where
-- retention took rows of it, told by the rollup's distinct timestamps, only for itself
-- (libs/clickhouse/src/rollups).
--
-- Rows, not aggregate states: ClickHouse 18.16 runs a view's outer SELECT on the inserted block
-- itself, so a view cannot aggregate per block and then per bucket; the reader groups the rows.
-- Time-ordered uploads give one or two spans a bucket; rewrites of buckets (a deletion, a rebuild's
-- recomputation) write one span each, computed over all their rows.
--
-- Separate views rather than columns of points_1m / points_1h: 18.16 cannot change a view's
-- SELECT in place, and dropping and creating it again would lose the inserts made meanwhile.
-- These are only added; a bucket they do not cover yet is checked the old way.
CREATE MATERIALIZED VIEW IF NOT EXISTS points_1m_spans
ENGINE = MergeTree()
ORDER BY (metric_name, bucket)
AS SELECT
  metric_name,
  intDiv(ts, 60000) * 60000 AS bucket,
  min(ts) AS first_ts,
  max(ts) AS last_ts,
  count() AS rows,
  uniqExact(ts) AS distinct_ts
FROM points
GROUP BY metric_name, bucket
;
CREATE MATERIALIZED VIEW IF NOT EXISTS points_1h_spans
ENGINE = MergeTree()
ORDER BY (metric_name, bucket)
AS SELECT
  metric_name,
  intDiv(ts, 3600000) * 3600000 AS bucket,
  min(ts) AS first_ts,
  max(ts) AS last_ts,
  count() AS rows,
  uniqExact(ts) AS distinct_ts
FROM points
GROUP BY metric_name, bucket
;
-- Insert tokens as for the rollups: a retried block dropped by points must not add its spans twice.
ALTER TABLE points_1m_spans MODIFY SETTING non_replicated_deduplication_window = 1000
;
ALTER TABLE points_1h_spans MODIFY SETTING non_replicated_deduplication_window = 1000
;
