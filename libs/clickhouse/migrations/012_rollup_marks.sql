-- Marks of the rewrites that void sealed rollup buckets (migration 011), with no clock and no
-- transaction. A user's deletion, once it has rewritten the rollups' buckets, writes one row per
-- metric and deleted range (inclusive epoch ms); a rebuild's swap writes one row with the empty
-- name, which covers every bucket of every metric (no metric is named ''). A bucket's marks are
-- the rows of its metric whose range overlaps it, plus the empty-name rows: their number only grows.
--
-- The seal pass reads a bucket's marks before it reads the bucket's count, and writes that number
-- in the sealed row's `marks`; a reader takes a sealed row only while its bucket's marks are still
-- that many (and its count still `rows`). A pass that read a bucket before a deletion rewrote it
-- read fewer marks than the deletion leaves, so its seal, written whenever, never answers
-- (src/rollups/marks-sql.ts). Rows are never deleted (a lower number could bring a void seal
-- back); a deletion writes one per metric, so they grow with deletions, not with points.
CREATE TABLE IF NOT EXISTS rollup_marks (
  metric_name String,
  from_ms Int64,
  to_ms Int64,
  cause String
) ENGINE = MergeTree()
ORDER BY (metric_name, from_ms)
;
-- Seals written before this migration read as seen with no mark: no deletion since has marked them.
ALTER TABLE points_1m_sealed ADD COLUMN IF NOT EXISTS marks UInt64 DEFAULT 0
;
ALTER TABLE points_1h_sealed ADD COLUMN IF NOT EXISTS marks UInt64 DEFAULT 0
;
