-- Which files reference which blob (issue 13), so that the ingest worker's blob collector asks
-- the files read model instead of folding every file in memory. Written by the files projector
-- with each change of a file (before its `files` row, which marks the change applied), one row
-- per (blob, file): live = 1 while the file exists, 0 once it is deleted; the newest by offset
-- wins, as in `files`. Ordered by sha256: "does a live file still reference this blob" is one
-- range of the table. A row with live = 0 is written only by a deletion, at its offset: the
-- collector reads the deletions after its sweep position from them.
CREATE TABLE IF NOT EXISTS file_blobs (
  sha256 String,
  file_id String,
  live UInt8,
  kafka_partition UInt32,
  kafka_offset UInt64
)
ENGINE = ReplacingMergeTree(kafka_offset)
ORDER BY (sha256, file_id)
SETTINGS index_granularity = 256
;
-- The files already projected (a read model written before this migration): their blob is in
-- their `state`. Running it twice writes the same rows again, which ReplacingMergeTree merges.
INSERT INTO file_blobs
SELECT visitParamExtractString(state, 'sha256') AS sha256, file_id, if(deleted = 1, 0, 1) AS live, kafka_partition, kafka_offset
FROM files FINAL
;
-- How far the blob collectors have handled deletions, per files partition: every blob a deletion
-- at or below this offset released has been removed, or was still referenced when checked.
-- Starting without a row, the first collection checks every deletion in the read model once.
CREATE TABLE IF NOT EXISTS blob_sweeps (
  kafka_partition UInt32,
  kafka_offset UInt64
)
ENGINE = ReplacingMergeTree(kafka_offset)
ORDER BY kafka_partition
;
