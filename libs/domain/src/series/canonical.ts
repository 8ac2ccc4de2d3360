import { parseSeriesName, seriesName } from '../points/series-name.ts';
import { METRIC_NAME, labelsOf, type Labels } from './labels.ts';

/**
 * The labels of a catalog name, for the PromQL API. Series names are written in Prometheus'
 * canonical form by one rule (points/series-name.ts: `name{label="value",...}`, labels sorted,
 * values escaped, the bare name without labels); this reads them back, `__name__` among the
 * labels.
 *
 * A name is read as labels only when it is exactly what that rule writes for the labels it
 * parses to. Any string is a valid metric name (the contract lets users upload anything), so a
 * name that is not canonical (unsorted or repeated labels, an empty value, `{}`, a stray brace
 * or escape) is read whole as `__name__` with no other label: it stays selectable by its exact
 * name, and two catalog names never read as the same label set.
 */
export function seriesLabels(text: string): Labels {
  const parsed = parseSeriesName(text);
  if (parsed && parsed.labels.length > 0) {
    const written = seriesName(parsed.metric, parsed.labels);
    if (written.ok && written.name === text) return labelsOf([[METRIC_NAME, parsed.metric], ...parsed.labels]);
  }
  return [[METRIC_NAME, text]];
}
