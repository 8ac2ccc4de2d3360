-- Seals of staged uploads (issue 15): an upload's rows written aside into a stage table while it
-- is parsed are attached to points when its seal is committed; the seal's offset is recorded here
-- in the same step, so a seal read again after a crash is known as done (src/points/stage.ts).
-- One row per staged share of a partition, a few per large upload.
CREATE TABLE IF NOT EXISTS points_seals (
  kafka_partition UInt16,
  seal_offset UInt64,
  task_id String,
  attempt String
) ENGINE = MergeTree()
ORDER BY (kafka_partition, seal_offset)
;
