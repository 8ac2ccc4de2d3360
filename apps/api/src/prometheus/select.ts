import { canRead, parseSeriesName, type CatalogSeries, type UserRecord } from '@meridian/domain';
import type { MetricCatalog } from '../catalog/routes.ts';

/** A series the caller may read, with its catalog extent (first and last point, epoch ms). */
export type ReadableSeries = CatalogSeries & { readonly firstMs: number; readonly lastMs: number };

/**
 * The series the caller may read: the catalog filtered by entitlements before anything is
 * matched, so a series the caller may not read is never seen by a selector, a label listing or
 * an error message: it is exactly as if it did not exist.
 */
export async function readableSeries(catalog: MetricCatalog, user: UserRecord): Promise<ReadableSeries[]> {
  const entries = await catalog.list();
  return entries
    .filter((e) => canRead(user, e.metric_name))
    .map((e) => ({
      name: e.metric_name,
      labels: parseSeriesName(e.metric_name),
      firstMs: e.first_ts,
      lastMs: e.last_ts,
      extent: { points: e.points, firstMs: e.first_ts, lastMs: e.last_ts },
    }));
}
