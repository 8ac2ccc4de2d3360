-- A second guard behind the sink's positions (max(kafka_offset) per partition): the table keeps
-- the tokens of its last 1000 inserted blocks, and the sink names each insert with a token of its
-- table and Kafka range, so an insert retried after its outcome was unknown is dropped by the
-- server if the first attempt was stored after all. 1000 blocks: far more than the inserts
-- between a failed attempt and its retry, and small (one token per block in a file beside the
-- parts). The catalog, written by a view in the same INSERT, keeps the tokens too, or a dropped
-- block would be counted again there.
-- Only where the server knows the setting and the catalog is an explicit table (Atomic
-- databases; see statementsFor in src/migrate.ts): elsewhere this migration is recorded with no
-- statement run, and the positions alone guard the sink, as they always have. A later start where
-- the server and database take it runs each statement whose table lacks the setting
-- (completeMigrations).
ALTER TABLE points MODIFY SETTING non_replicated_deduplication_window = 1000
;
ALTER TABLE metric_catalog MODIFY SETTING non_replicated_deduplication_window = 1000
;
