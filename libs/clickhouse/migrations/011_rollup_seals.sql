-- Sealed rollup buckets: the aggregates of a bucket's deduplicated points, computed once by the
-- ingest worker's seal pass (src/rollups/seal-pass.ts) and written with `rows`, the rollup's
-- countMerge(rows) the pass read before it read anything else of the bucket. A bucket's count only
-- grows with inserts (a view adds every row it is given), so a reader that finds the rollup's count
-- equal to a sealed row's `rows` knows nothing came since and answers from the sealed row, without
-- merging the bucket's distinct timestamps (the exactness check of migration 010, nearly all of a
-- long read's time). A deletion lowers counts, so a seal is also checked against the deletions
-- that came after it (the seal marks, src/rollups/marks.ts); a rebuild's swap voids
-- every seal.
--
-- Plain tables, not views: nothing writes them at insert. A bucket sealed again after an insert
-- has several rows, each with the count it saw; the reader takes the one whose `rows` equals the
-- rollup's count.
CREATE TABLE IF NOT EXISTS points_1m_sealed (
  metric_name String,
  bucket Int64,
  rows UInt64,
  points UInt64,
  min_value Float64,
  max_value Float64,
  sum_value Float64,
  last_value Float64
) ENGINE = MergeTree()
ORDER BY (metric_name, bucket)
;
CREATE TABLE IF NOT EXISTS points_1h_sealed (
  metric_name String,
  bucket Int64,
  rows UInt64,
  points UInt64,
  min_value Float64,
  max_value Float64,
  sum_value Float64,
  last_value Float64
) ENGINE = MergeTree()
ORDER BY (metric_name, bucket)
;
