import { seriesByLabels, type ConnOptions } from '@meridian/clickhouse';
import { canRead, matchSeries, seriesLabels, type CatalogSeries, type Labels, type Matcher, type UserRecord } from '@meridian/domain';
import type { MetricCatalog } from '../catalog/routes.ts';

/** A series the caller may read, with its catalog extent (first and last point, epoch ms). */
export type ReadableSeries = CatalogSeries & { readonly firstMs: number; readonly lastMs: number };

/**
 * Catalog names already read into labels: every query reads the whole catalog, and the same
 * names come back each time. Emptied past this many names, so a catalog that churns stays bounded.
 */
const MAX_PARSED = 500_000;
const parsed = new Map<string, Labels>();

function labelsOf(name: string): Labels {
  let labels = parsed.get(name);
  if (!labels) {
    if (parsed.size >= MAX_PARSED) parsed.clear();
    parsed.set(name, (labels = seriesLabels(name)));
  }
  return labels;
}

/**
 * The series the caller may read: the catalog filtered by entitlements before anything is
 * matched, so a series the caller may not read is never seen by a selector, a label listing or
 * an error message: it is exactly as if it did not exist. With `metrics` (a query whose every
 * selector names its metric), only those metrics' series are read from the catalog: no other
 * could match.
 */
export async function readableSeries(catalog: MetricCatalog, user: UserRecord, metrics: readonly string[] | null = null): Promise<ReadableSeries[]> {
  const entries = await (metrics ? catalog.families(metrics) : catalog.list());
  return entries
    .filter((e) => canRead(user, e.metric_name))
    .map((e) => ({
      name: e.metric_name,
      labels: labelsOf(e.metric_name),
      firstMs: e.first_ts,
      lastMs: e.last_ts,
      extent: { points: e.points, firstMs: e.first_ts, lastMs: e.last_ts },
    }));
}

/**
 * The readable series some selector's matchers choose, each selector's equality matchers
 * (`=`, `!=`) applied in ClickHouse to the labels kept beside the names (series_labels), so
 * only the series they pass are matched here; regular expressions are matched here, with the
 * RE2 the query evaluation uses, on those. `readable` is what the caller may read (entitled,
 * within the range): a name ClickHouse chooses that is not in it is not seen.
 */
export async function selectSeries(
  conn: ConnOptions,
  selectors: ReadonlyArray<readonly Matcher[]>,
  readable: readonly ReadableSeries[],
): Promise<ReadableSeries[]> {
  const chosen = new Set<ReadableSeries>();
  for (const matchers of selectors) {
    const equalities = matchers.filter((m) => m.op === '=' || m.op === '!=').map((m) => ({ name: m.name, equal: m.op === '=', value: m.value }));
    let candidates = readable;
    if (equalities.length > 0) {
      const names = new Set(await seriesByLabels(conn, equalities));
      candidates = readable.filter((s) => names.has(s.name));
    }
    for (const s of matchSeries(matchers, candidates)) chosen.add(s as ReadableSeries);
  }
  return [...chosen];
}
