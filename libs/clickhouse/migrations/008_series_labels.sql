-- The labels of every series name, beside it: the read side (the Prometheus API's series
-- selection) filters by label here instead of parsing names. One row per name: `labels` are
-- the name's labels in canonical form, `__name__` among them (a name not in canonical form has
-- `__name__` only, itself), as parallel arrays sorted by label name (18.16 has no Map type).
-- A name's labels are a function of the name alone, so a row is never wrong, only possibly
-- missing: the api adds the rows of catalog names it lacks before it reads (series-labels.ts),
-- and a replay's swap of the points and catalog needs nothing here. Rows written twice (two api
-- instances at once) are identical and merged away in the background; readers use DISTINCT.
CREATE TABLE IF NOT EXISTS series_labels (
  name String,
  metric String,
  label_names Array(String),
  label_values Array(String)
) ENGINE = ReplacingMergeTree()
ORDER BY name
;
