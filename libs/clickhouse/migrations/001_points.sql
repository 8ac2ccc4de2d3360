-- Metric points, one row per accepted point. Timestamps are epoch milliseconds (Int64):
-- portable to ClickHouse 18.16, which has no DateTime64.
-- kafka_partition/kafka_offset/row_in_batch say which point-batch fact produced the row:
-- the projector resumes from max(kafka_offset) per partition, which makes the sink exactly-once.
-- Unpartitioned on purpose: one INSERT block becomes one part, so a crash mid-insert
-- leaves either the whole block or none of it.
CREATE TABLE IF NOT EXISTS points (
  metric_name String,
  ts Int64,
  value Float64,
  updated_at Int64,
  task_id String,
  kafka_partition UInt16,
  kafka_offset UInt64,
  row_in_batch UInt32
) ENGINE = MergeTree()
PARTITION BY tuple()
ORDER BY (metric_name, ts, updated_at)
;
