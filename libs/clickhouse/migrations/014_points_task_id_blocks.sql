-- Larger compressed blocks for points' task ids, chosen by measurement (make bench-storage,
-- BENCH_CODECS: the bench's telemetry fleet on ClickHouse 26.9, a task id per two minutes of
-- pushes, after OPTIMIZE FINAL). ClickHouse compresses a column in blocks of at least
-- min_compress_block_size (64 KiB) of a granule's bytes: a granule of 8,192 task ids (about
-- 300 KB) is one block, and zstd starts afresh in each. Sorted by name and time, each series
-- runs through every task, so every block holds hundreds of distinct ids that the blocks before
-- held too. 4 MiB blocks share them over more series: task_id took 1.04 bytes a point with 009's
-- ZSTD(3) at 2M points and 0.33-0.47 with these, 2.57 and 0.60-0.63 at 10M, for no more CPU in
-- the insert and merge (docs/benchmarks.md). Only task_id: it is read by deletions of an upload,
-- replay and verify, which scan it whole; the columns every query reads (names, timestamps,
-- values) keep their blocks, so a read of a few granules decompresses no more than before.
-- Only where the server has column-level settings (statementsFor in src/migrate.ts: 24.1+);
-- elsewhere this migration is recorded with no statement run, and the first start on a server
-- that has them runs it if task_id lacks these settings (completeMigrations). Existing parts keep
-- their blocks until merged. A rebuild's points table gets this statement after its CREATE
-- (createGenerationSql in libs/replay); a stage is created AS its target, so it has them too.
ALTER TABLE points MODIFY COLUMN task_id MODIFY SETTING min_compress_block_size = 4194304, max_compress_block_size = 4194304
;
