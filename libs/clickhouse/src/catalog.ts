import { unavailable } from '@meridian/domain';
import { queryText, type ConnOptions } from './download/http.ts';

/**
 * The metric catalog (migration 002: an aggregating view kept by every insert into points),
 * read for pattern matching. Names the caller gives travel as external data, never as SQL.
 */
export type CatalogEntry = { readonly metric_name: string; readonly points: number; readonly first_ts: number; readonly last_ts: number };

function parse(text: string): CatalogEntry[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const row = JSON.parse(l) as { metric_name: string; points: string; first_ts: string; last_ts: string };
      return { metric_name: row.metric_name, points: Number(row.points), first_ts: Number(row.first_ts), last_ts: Number(row.last_ts) };
    });
}

/** Kept-alive connections (reuseConnection): every PromQL query and name lookup starts with a catalog read, small and read-only. */
const SELECT = 'SELECT metric_name, countMerge(points) AS points, minMerge(first_ts) AS first_ts, maxMerge(last_ts) AS last_ts FROM metric_catalog';

/**
 * The catalog as the api's MetricCatalog port reads it, over these connection options. A read
 * that fails (a server refusing, resetting or hanging up mid-answer, an error answer) is the
 * metric store's failure, never the caller's: it rejects with a retriable InfrastructureError (503
 * with Retry-After), so no route that looks names up before its own queries (the catalog, a
 * download's name resolution, HEAD) lets a transport error through as a 500.
 */
export function clickhouseMetricCatalog(conn: ConnOptions): {
  list(): Promise<CatalogEntry[]>;
  entries(names: readonly string[]): Promise<CatalogEntry[]>;
  families(metrics: readonly string[]): Promise<CatalogEntry[]>;
  matching(match: NameMatch, text: string): Promise<CatalogEntry[]>;
} {
  return {
    list: () => answered(listCatalog(conn)),
    entries: (names) => answered(catalogEntries(conn, names)),
    families: (metrics) => answered(catalogFamilies(conn, metrics)),
    matching: (match, text) => answered(catalogMatching(conn, match, text)),
  };
}

async function answered(read: Promise<CatalogEntry[]>): Promise<CatalogEntry[]> {
  try {
    return await read;
  } catch (cause) {
    throw unavailable('clickhouse', 'the metric store did not answer; retry later', cause);
  }
}

/** Every metric in the catalog. */
async function listCatalog(conn: ConnOptions): Promise<CatalogEntry[]> {
  return parse(await queryText(conn, { sql: `${SELECT} GROUP BY metric_name FORMAT JSONEachRow`, reuseConnection: true }));
}

/** The catalog entries of exactly these names (the ones that exist). */
async function catalogEntries(conn: ConnOptions, names: readonly string[]): Promise<CatalogEntry[]> {
  if (names.length === 0) return [];
  return parse(
    await queryText(conn, {
      sql: `${SELECT} WHERE metric_name IN (SELECT name FROM wanted) GROUP BY metric_name FORMAT JSONEachRow`,
      tables: [{ name: 'wanted', structure: 'name String', rows: names.map((n) => [n]) }],
      reuseConnection: true,
    }),
  );
}

/**
 * The metric a catalog name is a series of: the text before its first `{` (the whole name when
 * it has none), the only text a series name's __name__ label can be besides the whole name.
 */
const FAMILY = "substring(metric_name, 1, position(concat(metric_name, '{'), '{') - 1)";

/**
 * The entries whose series' __name__ can be one of these metrics: the name itself, or the name
 * before its labels (`x` and `x{job="a"}` for x). Filtered before the states are merged, so a
 * query naming one metric does not read the catalog of every other.
 */
async function catalogFamilies(conn: ConnOptions, metrics: readonly string[]): Promise<CatalogEntry[]> {
  if (metrics.length === 0) return [];
  return parse(
    await queryText(conn, {
      sql: `${SELECT} WHERE metric_name IN (SELECT name FROM wanted) OR ${FAMILY} IN (SELECT name FROM wanted) GROUP BY metric_name FORMAT JSONEachRow`,
      tables: [{ name: 'wanted', structure: 'name String', rows: metrics.map((n) => [n]) }],
      reuseConnection: true,
    }),
  );
}

/** How a download's substring pattern matches a name. */
export type NameMatch = 'contains' | 'starts_with' | 'ends_with';

/** The api's tests, on UTF-8 bytes rather than UTF-16 code units: the same answer for any well-formed text. */
const MATCH_SQL: Record<NameMatch, (text: string) => string> = {
  contains: (text) => `position(metric_name, ${text}) > 0`,
  starts_with: (text) => `startsWith(metric_name, ${text})`,
  ends_with: (text) => `endsWith(metric_name, ${text})`,
};

/**
 * The entries whose name matches `text` as a download's pattern does, filtered before the states
 * are merged: a download of one prefix reads and parses its own metrics, not the whole catalog.
 */
async function catalogMatching(conn: ConnOptions, match: NameMatch, text: string): Promise<CatalogEntry[]> {
  return parse(
    await queryText(conn, {
      sql: `${SELECT} WHERE ${MATCH_SQL[match]('(SELECT any(text) FROM wanted)')} GROUP BY metric_name FORMAT JSONEachRow`,
      tables: [{ name: 'wanted', structure: 'text String', rows: [[text]] }],
      reuseConnection: true,
    }),
  );
}
