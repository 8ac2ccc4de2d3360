-- Column codecs for points, chosen by measurement (2M points of the bench's telemetry fleet on
-- ClickHouse 26.9, a task id per two minutes of pushes, after OPTIMIZE FINAL): 15.5 bytes a point
-- with the default LZ4, 5.55 with these (figures per column below are from the same points with
-- one task id, 11.7 and 4.6 bytes a point in all).
-- Timestamps of a series are sorted and a scrape interval apart, with jitter: Delta then ZSTD
-- (1.47 MB) beat DoubleDelta then ZSTD (1.92 MB) and ZSTD alone (5.2 MB). Values: ZSTD alone
-- (7.24 MB) beat Gorilla then ZSTD (7.51 MB): counters and two-decimal gauges share their high
-- bytes, which Gorilla's XOR does not keep byte-aligned. Names and task ids repeat along the
-- sort key: ZSTD(3) took them to a twentieth of LZ4's bytes (ZSTD(1) did worse than LZ4).
-- LowCardinality(String) names saved another 0.15 bytes a point, not worth a type change of
-- the column every query reads.
-- Only where the server has these codecs (statementsFor in src/migrate.ts: 20.1+); elsewhere
-- this migration is recorded with no statement run (18.16 compresses with the method of its
-- server config), and the first start on a server that has them runs each statement whose column
-- has no codec yet (completeMigrations). Existing parts keep their compression until merged; new
-- parts and merges use these. A rebuild's points table gets these statements too, after its
-- CREATE (createGenerationSql in libs/replay), whether it is made AS points or from 001.
ALTER TABLE points MODIFY COLUMN metric_name String CODEC(ZSTD(3))
;
ALTER TABLE points MODIFY COLUMN ts Int64 CODEC(Delta, ZSTD(3))
;
ALTER TABLE points MODIFY COLUMN value Float64 CODEC(ZSTD(3))
;
ALTER TABLE points MODIFY COLUMN updated_at Int64 CODEC(Delta, ZSTD(3))
;
ALTER TABLE points MODIFY COLUMN task_id String CODEC(ZSTD(3))
;
ALTER TABLE points MODIFY COLUMN kafka_partition UInt16 CODEC(T64, ZSTD(3))
;
ALTER TABLE points MODIFY COLUMN kafka_offset UInt64 CODEC(Delta, ZSTD(3))
;
ALTER TABLE points MODIFY COLUMN row_in_batch UInt32 CODEC(Delta, ZSTD(3))
;
