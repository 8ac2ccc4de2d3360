-- Counted marks, in place of migration 012's row per deletion, which a read of a sealed bucket
-- compared one by one with its bucket (about a millisecond per mark of the metric, for ever).
--
-- A user's deletion, once it has rewritten the rollups' buckets, adds n = 1 for each of its
-- metrics and each day (`period`, intDiv(bucket, 86400000)) its range overlaps; a range over more
-- than 366 days adds one row at the period -9007199254740991, which counts in every day of the
-- metric. A rebuild's swap adds one row with the empty name (no metric is named ''), which counts
-- in every bucket of every metric. A bucket's marks are sum(n) of its metric's day, of its
-- metric's whole-axis row and of the empty name's: that number only grows.
--
-- Rows are summed by (metric_name, period) as parts merge, so the table holds at most one row per
-- metric and day a deletion ever touched (plus those of parts not merged yet); readers always
-- take sum(n) grouped, never one row. `cause` (the deletion's task, the swap's generation) makes
-- two deletions' rows differ, so a replicated table's insert deduplication, which drops a block
-- identical to one it has seen, keeps the second; it is one of the merged rows' causes after that.
-- A deletion voids every seal of its metrics' days; the seal pass seals them again.
CREATE TABLE IF NOT EXISTS rollup_mark_counts (
  metric_name String,
  period Int64,
  n UInt64,
  cause String
) ENGINE = SummingMergeTree(n)
ORDER BY (metric_name, period)
;
-- Seals of migration 012 hold the number of marks rows of their bucket, which the counts above
-- do not equal: they are emptied (never trusted again), and the seal pass seals every bucket anew.
TRUNCATE TABLE IF EXISTS points_1m_sealed
;
TRUNCATE TABLE IF EXISTS points_1h_sealed
;
DROP TABLE IF EXISTS rollup_marks
;
