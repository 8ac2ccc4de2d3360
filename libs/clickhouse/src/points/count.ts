import { filterSql } from '../download/filter-sql.ts';
import { queryText, type ConnOptions } from '../download/http.ts';

/** Points of these metrics with a timestamp in [fromMs, toMs] (inclusive) in points now; names as external data. */
export async function countPoints(conn: ConnOptions, metricNames: readonly string[], fromMs: number, toMs: number): Promise<number> {
  if (metricNames.length === 0) return 0;
  const filter = filterSql({ metricNames, fromMs, toMs, latestOnly: false, after: null, until: null });
  const text = await queryText(conn, { sql: `SELECT toString(count()) FROM points WHERE ${filter.where} FORMAT TabSeparated`, tables: filter.tables });
  return Number(text.trim());
}
