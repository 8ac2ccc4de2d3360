-- The metric catalog: per metric name, how many points and the first and last timestamp.
-- A materialized view on points, so it is written by the same INSERT as the points: the
-- server aggregates every block into the catalog right after writing it to points, whatever
-- happens to the client meanwhile. (18.16 has no transactions: only a crash of the server
-- itself between the two writes could leave the catalog short of one block.) Partial states
-- are merged in the background; read it with the -Merge combinators, grouped:
--   SELECT metric_name, countMerge(points) AS points, minMerge(first_ts) AS first_ts,
--          maxMerge(last_ts) AS last_ts FROM metric_catalog GROUP BY metric_name
-- Counts include the points inserted after the view exists (no POPULATE: it would miss points
-- inserted while populating). Migrations run at start, before the projector writes a point;
-- a database that already held points before this migration needs its catalog rebuilt.
CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog
ENGINE = AggregatingMergeTree()
ORDER BY metric_name
AS SELECT
  metric_name,
  countState() AS points,
  minState(ts) AS first_ts,
  maxState(ts) AS last_ts
FROM points
GROUP BY metric_name
;
