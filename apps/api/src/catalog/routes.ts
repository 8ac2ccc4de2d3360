import type { Context } from 'koa';
import { z } from 'zod';
import type { CatalogEntry, NameMatch } from '@meridian/clickhouse';
import { canRead, formatTimestamp, PATTERNS, resolveMetricNames, validationError, type Pattern, type UserRecord } from '@meridian/domain';
import { defineRoute, type RouteDef } from '../http/route.ts';

/** The metric catalog as the route reads it (implemented by libs/clickhouse's clickhouseMetricCatalog). */
export interface MetricCatalog {
  /** Every metric. Both reads reject with a retriable InfrastructureError when the store does not answer. */
  list(): Promise<CatalogEntry[]>;
  /** The entries of exactly these names (the ones that exist). */
  entries(names: readonly string[]): Promise<CatalogEntry[]>;
  /** The entries of these metrics' series: each name, and the names made of it and labels (`x{job="a"}` for x). */
  families(metrics: readonly string[]): Promise<CatalogEntry[]>;
  /** The entries whose name contains, starts or ends with `text`. */
  matching(match: NameMatch, text: string): Promise<CatalogEntry[]>;
}

/**
 * The entries a download's selection can name, read as narrowly as the pattern allows: exact
 * names looked up, a substring matched by the store. The caller resolves the names from them
 * (resolveMetricNames: the same test, and the entitlements).
 */
export function patternEntries(catalog: MetricCatalog, pattern: Pattern, metrics: string): Promise<CatalogEntry[]> {
  if (pattern === 'single') return catalog.entries([metrics]);
  if (pattern === 'list') return catalog.entries(metrics.split(','));
  return catalog.matching(pattern, metrics);
}

/**
 * maxListNames: MERIDIAN_MAX_DOWNLOAD_NAMES (a list names at most this many, as in a
 * download); pageCeiling: MERIDIAN_MAX_CATALOG_PAGE (largest limit).
 */
export type CatalogDeps = { readonly catalog: MetricCatalog; readonly maxListNames: number; readonly pageCeiling: number };

const CATALOG_PATH = '/api/v1/metrics';
const DEFAULT_LIMIT = 100;

const querySchema = z.object({
  metrics: z
    .string()
    .min(1)
    .optional()
    .describe(
      'A metric name, a comma-separated list (pattern=list), or the text a substring pattern applies to, as in a download. Left out: every metric you may read',
    ),
  pattern: z
    .enum(PATTERNS as [Pattern, ...Pattern[]])
    .optional()
    .describe("single (default when metrics is given), list, contains, starts_with, ends_with: the download's patterns"),
  limit: z
    .string()
    .regex(/^\d{1,10}$/, 'must be a positive integer')
    .optional()
    .describe(`Metrics per page; default ${DEFAULT_LIMIT}, at most MERIDIAN_MAX_CATALOG_PAGE (default 1000)`),
  after: z.string().min(1).optional().describe("The previous page's next_after: this page starts after that name"),
});

const entrySchema = z.object({
  metric_name: z.string(),
  points: z.number().int().describe('Points stored, duplicates (same timestamp, several updated_at) included: the rows a download without latest_only returns'),
  first_timestamp: z.string().describe("The earliest point's timestamp, UTC, as in a download"),
  last_timestamp: z.string().describe("The latest point's timestamp"),
});
const pageSchema = z.object({
  metrics: z.array(entrySchema).describe('Ordered by metric_name (bytewise, as downloads order rows)'),
  next_after: z.string().nullable().describe('Pass as after to get the next page; null on the last page'),
});
const example = {
  metrics: [{ metric_name: 'cpu:load', points: 1440, first_timestamp: '2024-01-02T00:00:00+0000', last_timestamp: '2024-01-02T23:59:00+0000' }],
  next_after: null,
};

type Query = z.infer<typeof querySchema>;

/** The readable names the query selects, with their catalog entries (the catalog is read once). */
async function select(deps: CatalogDeps, query: Query, user: UserRecord): Promise<{ names: string[]; entries: Map<string, CatalogEntry> }> {
  const may = (name: string) => canRead(user, name);
  if (query.metrics === undefined) {
    const catalog = await deps.catalog.list();
    const names = resolveMetricNames(
      'contains',
      '',
      catalog.map((c) => c.metric_name),
      may,
    );
    return { names, entries: new Map(catalog.map((c) => [c.metric_name, c])) };
  }
  const pattern = query.pattern ?? 'single';
  if (pattern === 'list' && query.metrics.split(',').length > deps.maxListNames) {
    throw validationError(`metrics names more than ${deps.maxListNames} metrics`, [
      { field: 'metrics', reason: `names more than ${deps.maxListNames} metrics (MERIDIAN_MAX_DOWNLOAD_NAMES)` },
    ]);
  }
  const catalog = await patternEntries(deps.catalog, pattern, query.metrics);
  const names = resolveMetricNames(
    pattern,
    query.metrics,
    catalog.map((c) => c.metric_name),
    may,
  );
  return { names, entries: new Map(catalog.map((c) => [c.metric_name, c])) };
}

function limitOf(query: Query, ceiling: number): number {
  if (query.limit === undefined) return Math.min(DEFAULT_LIMIT, ceiling);
  const limit = Number(query.limit);
  if (limit < 1 || limit > ceiling)
    throw validationError(`limit must be between 1 and ${ceiling}`, [
      { field: 'limit', reason: `must be between 1 and ${ceiling} (MERIDIAN_MAX_CATALOG_PAGE)` },
    ]);
  return limit;
}

/**
 * GET /api/v1/metrics: the metric catalog as the caller may see it. Entitlements filter the
 * names before anything is counted or paged, so no answer (a count, a page size, a 404)
 * tells of a metric the caller may not read. Pages are keyed by the last name (after), not an
 * offset: a metric created between two pages moves no other metric across a page boundary.
 */
export function catalogRoute(deps: CatalogDeps): RouteDef {
  return defineRoute({
    method: 'GET',
    path: CATALOG_PATH,
    operationId: 'listMetrics',
    summary: 'The metrics you may read, with their point counts and first and last timestamps',
    description: [
      'Admins see every metric. metrics and pattern select as in a download: single and list name metrics exactly (a name that does not exist or that you may not read: 404, the same for both);',
      'contains, starts_with and ends_with apply to the names you may read and may match none.',
      'Paged by name: pass next_after as after for the next page.',
    ].join(' '),
    tags: ['metrics'],
    auth: 'user',
    query: querySchema,
    responses: { 200: { description: 'One page of the catalog', schema: pageSchema, example } },
    problems: ['not_found', 'unavailable'],
    handler: async (ctx: Context, { query, user }) => {
      const limit = limitOf(query, deps.pageCeiling);
      const { names, entries } = await select(deps, query, user);
      const after = query.after === undefined ? null : Buffer.from(query.after);
      const rest = after === null ? names : names.filter((n) => Buffer.compare(Buffer.from(n), after) > 0);
      const page = rest.slice(0, limit);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = {
        metrics: page.map((name) => {
          const entry = entries.get(name)!;
          return { metric_name: name, points: entry.points, first_timestamp: formatTimestamp(entry.first_ts), last_timestamp: formatTimestamp(entry.last_ts) };
        }),
        next_after: rest.length > limit ? page[page.length - 1] : null,
      };
    },
  });
}
