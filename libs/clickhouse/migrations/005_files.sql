-- The files read model (issue 13): the file catalog projected from the files topic by the ingest
-- process's files projector, so that no api process holds the catalog in memory. As for tasks
-- (migration 003): one row per applied change, ReplacingMergeTree keeps the newest by the offset
-- of the change (the files topic's events of one file share its partition), read with FINAL.
--
-- `files`: each file's state by id, for lookups and for the projector's own folding. A deleted
-- file keeps its row with deleted = 1: a second definition of its id is then ignored on every
-- replay alike. `state` is the FileRecord as JSON (grants as [user, access] pairs); seq is the
-- definition's position (0, 1, ...), the order lists and cursors use.
CREATE TABLE IF NOT EXISTS files (
  file_id String,
  owner String,
  seq UInt64,
  size UInt64,
  deleted UInt8,
  state String,
  kafka_partition UInt32,
  kafka_offset UInt64
)
ENGINE = ReplacingMergeTree(kafka_offset)
ORDER BY file_id
SETTINGS index_granularity = 256
;
-- `file_listing`: who sees which file, one row per (user, file): the owner, each grantee, and
-- `*` for admins (who see every file; no user name can be `*`). access is rw or r, or empty once
-- the user lost it (a revoked grant, a deleted file). Ordered by (user_name, seq): a user's list,
-- newest first, and their usage are one range of the table. name_lower is the name as
-- JavaScript lowercases it, so name_contains matches exactly as it always has.
CREATE TABLE IF NOT EXISTS file_listing (
  user_name String,
  seq UInt64,
  file_id String,
  access String,
  owner String,
  file_name String,
  name_lower String,
  description String,
  size UInt64,
  created_at UInt64,
  kafka_partition UInt32,
  kafka_offset UInt64
)
ENGINE = ReplacingMergeTree(kafka_offset)
ORDER BY (user_name, seq)
SETTINGS index_granularity = 256
;
-- How far the files projector has applied each files partition (markers included), written
-- after the batch's rows: where it resumes, and what an api waits for before deciding.
CREATE TABLE IF NOT EXISTS files_positions (
  kafka_partition UInt32,
  kafka_offset UInt64
)
ENGINE = ReplacingMergeTree(kafka_offset)
ORDER BY kafka_partition
;
