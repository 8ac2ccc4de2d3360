import type { Context } from 'koa';
import { z } from 'zod';
import {
  badData,
  execution,
  LABEL_NAME_RE,
  labelsObject,
  parseDurationParamMs,
  parseInstantParams,
  parseOptionalRange,
  parsePromql,
  parseRangeParams,
  queryData,
  queryDataJsonChunks,
  type UserRecord,
} from '@meridian/domain';
import { defineRoute, type RouteDef } from '../http/route.ts';
import { answer, answerJson, inEnvelope } from './envelope.ts';
import { runQuery, type PromqlDeps } from './execute.ts';
import { requestParams, type RequestParams } from './params.ts';
import { readableSeries, selectSeries, type ReadableSeries } from './select.ts';

/**
 * Prometheus' HTTP query API under its own prefix: /api/v1 is Meridian's API, whose errors are
 * problem+json and whose paths (such as /api/v1/metrics/series) mean other things; Grafana and
 * promtool are pointed at https://<host>/prometheus and append /api/v1/… themselves.
 */
export const PROMETHEUS_PREFIX = '/prometheus/api/v1';

const text = z.union([z.string(), z.array(z.string())]).optional();
const timeDoc = 'RFC 3339 or Unix seconds (a float)';
const queryParams = z.object({
  query: text.describe('A PromQL expression (the supported subset: see the docs; anything else answers 422 naming the unsupported part)'),
  time: text.describe(`Evaluation time, ${timeDoc}; default now`),
  timeout: text.describe('Most time the query may take (float seconds or a duration such as 10s); at most MERIDIAN_PROMQL_TIMEOUT_MS'),
});
const rangeParams = z.object({
  query: text.describe('A PromQL expression returning a scalar or an instant vector'),
  start: text.describe(`First evaluation time, ${timeDoc}`),
  end: text.describe(`Last evaluation time at most, ${timeDoc}`),
  step: text.describe('Time between evaluations: float seconds or a duration such as 5m; (end − start) / step at most MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES'),
  timeout: text.describe('As in query'),
});
const seriesParams = z.object({
  'match[]': text.describe('A series selector such as up{job="api"}; repeat for a union'),
  start: text.describe(`Only series with points at or after this time, ${timeDoc}`),
  end: text.describe(`Only series with points at or before this time, ${timeDoc}`),
});

const exemplarParams = z.object({
  query: text.describe('A PromQL expression'),
  start: text.describe(`Start of the range, ${timeDoc}`),
  end: text.describe(`End of the range, ${timeDoc}`),
});

const envelope = z.object({
  status: z.enum(['success', 'error']),
  data: z.unknown().optional(),
  errorType: z.string().optional(),
  error: z.string().optional(),
});
const responses = (example: unknown) => ({
  200: { description: 'Prometheus\' envelope: {"status":"success","data":…}', schema: envelope, example: { status: 'success', data: example } },
  400: { description: 'errorType bad_data: a parameter or the query does not parse', schema: envelope },
  422: { description: 'errorType execution: the query cannot be answered (an unsupported part of PromQL, a bound reached)', schema: envelope },
  503: { description: 'errorType timeout or unavailable', schema: envelope },
});
const formBody = {
  contentTypes: { 'application/x-www-form-urlencoded': z.record(z.string(), z.string()) },
  description: "The same parameters as a form, as Prometheus' API takes them",
};

function timeoutMs(deps: PromqlDeps, p: RequestParams): number {
  const asked = p.first['timeout'];
  if (asked === undefined || asked === '') return deps.limits.timeoutMs;
  const ms = parseDurationParamMs('timeout', asked);
  return ms > 0 ? Math.min(ms, deps.limits.timeoutMs) : deps.limits.timeoutMs;
}

async function instantQuery(deps: PromqlDeps, ctx: Context, user: UserRecord): Promise<void> {
  const p = await requestParams(ctx, deps.maxBodyBytes);
  const { query, timeMs } = parseInstantParams(p.first, Date.now());
  const expr = parsePromql(query);
  const result = await runQuery(deps, ctx, user, expr, { startMs: timeMs, endMs: timeMs, stepMs: 1, instant: true }, timeoutMs(deps, p));
  answer(ctx, queryData(result));
}

async function rangeQuery(deps: PromqlDeps, ctx: Context, user: UserRecord): Promise<void> {
  const p = await requestParams(ctx, deps.maxBodyBytes);
  const { query, startMs, endMs, stepMs } = parseRangeParams(p.first, deps.limits.maxPointsPerSeries);
  const expr = parsePromql(query);
  if (expr.kind === 'matrix') throw badData('invalid expression type "range vector" for range query, must be Scalar or instant Vector');
  const result = await runQuery(deps, ctx, user, expr, { startMs, endMs, stepMs, instant: false }, timeoutMs(deps, p));
  answerJson(ctx, queryDataJsonChunks(result));
}

/** The readable series the match[] selectors choose (all readable ones when none is given and none is required), within start and end. */
async function matchedSeries(deps: PromqlDeps, p: RequestParams, user: UserRecord, required: boolean): Promise<ReadableSeries[]> {
  const matches = p.all('match[]');
  if (required && matches.length === 0) throw badData('no match[] parameter provided');
  const selectors = matches.map((m) => {
    const e = parsePromql(m);
    if (e.kind !== 'vector' || e.offsetMs !== 0) throw badData(`invalid parameter "match[]": ${JSON.stringify(m)} is not a series selector`);
    return e;
  });
  const { startMs, endMs } = parseOptionalRange(p.first);
  const all = (await readableSeries(deps.catalog, user)).filter((s) => s.lastMs >= startMs && s.firstMs <= endMs);
  if (selectors.length === 0) return all;
  return selectSeries(
    deps.conn,
    selectors.map((sel) => sel.matchers),
    all,
  );
}

function bounded<T>(deps: PromqlDeps, items: T[], what: string): T[] {
  if (items.length > deps.limits.maxSeries) {
    throw execution(
      `the answer would hold ${items.length} ${what}, more than ${deps.limits.maxSeries} (MERIDIAN_PROMQL_MAX_SERIES); narrow match[] or the range`,
    );
  }
  return items;
}

const byBytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** GET and POST of one operation: Prometheus accepts both for query, query_range, series and labels. */
function both(
  path: string,
  operationId: string,
  summary: string,
  description: string,
  query: z.ZodType,
  example: unknown,
  run: (ctx: Context, user: UserRecord) => Promise<void>,
): RouteDef[] {
  const common = {
    path: `${PROMETHEUS_PREFIX}${path}`,
    summary,
    description,
    tags: ['prometheus'],
    auth: 'user' as const,
    problems: ['unauthenticated' as const],
    responses: responses(example),
  };
  return [
    defineRoute({ ...common, method: 'GET', operationId, query, handler: (ctx, { user }) => inEnvelope(ctx, () => run(ctx, user)) }),
    defineRoute({
      ...common,
      method: 'POST',
      operationId: `${operationId}Post`,
      requestBodyDoc: formBody,
      // The form is read up to MERIDIAN_MAX_SMALL_JSON_BODY_BYTES; another media type is refused.
      problems: ['unauthenticated', 'payload_too_large', 'unsupported_media_type'],
      handler: (ctx, { user }) => inEnvelope(ctx, () => run(ctx, user)),
    }),
  ];
}

/** Every route of the Prometheus query API. */
export function prometheusRoutes(deps: PromqlDeps): RouteDef[] {
  return [...queryRoutes(deps), ...seriesRoutes(deps), ...infoRoutes(deps)];
}

/** The PromQL queries: instant and range. */
function queryRoutes(deps: PromqlDeps): RouteDef[] {
  return [
    ...both(
      '/query',
      'prometheusQuery',
      "PromQL instant query (Prometheus' HTTP API)",
      'Evaluates a PromQL expression at one time over the series you may read. Series are catalog metrics named name{label="value",...}; any other name is a series with __name__ only.',
      queryParams,
      { resultType: 'vector', result: [{ metric: { __name__: 'up', job: 'api' }, value: [1700000000, '1'] }] },
      (ctx, user) => instantQuery(deps, ctx, user),
    ),
    ...both(
      '/query_range',
      'prometheusQueryRange',
      "PromQL range query (Prometheus' HTTP API)",
      'Evaluates a PromQL expression at start, start + step, … up to end over the series you may read.',
      rangeParams,
      {
        resultType: 'matrix',
        result: [
          {
            metric: { job: 'api' },
            values: [
              [1700000000, '0.5'],
              [1700000060, '0.75'],
            ],
          },
        ],
      },
      (ctx, user) => rangeQuery(deps, ctx, user),
    ),
  ];
}

/** The series, their label names and one label's values. */
function seriesRoutes(deps: PromqlDeps): RouteDef[] {
  return [
    ...both(
      '/series',
      'prometheusSeries',
      "Series matching selectors (Prometheus' HTTP API)",
      'The label sets of the readable series any match[] selector chooses.',
      seriesParams,
      [{ __name__: 'up', job: 'api' }],
      async (ctx, user) => {
        const p = await requestParams(ctx, deps.maxBodyBytes);
        answer(
          ctx,
          bounded(
            deps,
            (await matchedSeries(deps, p, user, true)).map((s) => labelsObject(s.labels)),
            'series',
          ),
        );
      },
    ),
    ...both(
      '/labels',
      'prometheusLabels',
      "Label names (Prometheus' HTTP API)",
      'The label names of the readable series (those match[] chooses, when given), sorted.',
      seriesParams,
      ['__name__', 'job'],
      async (ctx, user) => {
        const p = await requestParams(ctx, deps.maxBodyBytes);
        const names = new Set<string>();
        for (const s of await matchedSeries(deps, p, user, false)) for (const [n] of s.labels) names.add(n);
        answer(ctx, bounded(deps, [...names].sort(byBytes), 'label names'));
      },
    ),
    defineRoute({
      method: 'GET',
      path: `${PROMETHEUS_PREFIX}/label/{name}/values`,
      operationId: 'prometheusLabelValues',
      summary: "Values of one label (Prometheus' HTTP API)",
      description: 'The values one label takes over the readable series (those match[] chooses, when given), sorted; __name__ gives the metric names.',
      tags: ['prometheus'],
      auth: 'user',
      problems: ['unauthenticated'],
      query: seriesParams,
      params: z.object({ name: z.string() }),
      responses: responses(['api', 'web']),
      handler: (ctx, { user, params }) =>
        inEnvelope(ctx, async () => {
          const name = params.name;
          if (!LABEL_NAME_RE.test(name)) throw badData(`invalid label name: ${JSON.stringify(name)}`);
          const p = await requestParams(ctx, deps.maxBodyBytes);
          const values = new Set<string>();
          for (const s of await matchedSeries(deps, p, user, false)) for (const [n, v] of s.labels) if (n === name) values.add(v);
          answer(ctx, bounded(deps, [...values].sort(byBytes), 'label values'));
        }),
    }),
  ];
}

/** What Meridian answers as Prometheus does without keeping it (exemplars, metadata), and its build information. */
function infoRoutes(deps: PromqlDeps): RouteDef[] {
  return [
    ...both(
      '/query_exemplars',
      'prometheusQueryExemplars',
      "Exemplars (Prometheus' HTTP API)",
      'Meridian stores no exemplars: always the empty list, as Prometheus answers for series without any. Grafana asks for them when a panel shows exemplars.',
      exemplarParams,
      [],
      async (ctx) => {
        const p = await requestParams(ctx, deps.maxBodyBytes);
        parsePromql(p.first['query'] ?? '');
        parseOptionalRange(p.first);
        answer(ctx, []);
      },
    ),
    defineRoute({
      method: 'GET',
      path: `${PROMETHEUS_PREFIX}/metadata`,
      operationId: 'prometheusMetadata',
      summary: "Metric metadata (Prometheus' HTTP API)",
      description: 'Meridian keeps no type, help or unit of a metric: always the empty object, which Prometheus also answers for metrics without metadata.',
      tags: ['prometheus'],
      auth: 'user',
      problems: ['unauthenticated'],
      responses: responses({}),
      handler: (ctx) => inEnvelope(ctx, () => Promise.resolve(answer(ctx, {}))),
    }),
    defineRoute({
      method: 'GET',
      path: `${PROMETHEUS_PREFIX}/status/buildinfo`,
      operationId: 'prometheusBuildinfo',
      summary: "Build information (Prometheus' HTTP API)",
      description: 'The Prometheus version whose API and PromQL semantics this follows (2.42), so clients such as Grafana choose the features they use.',
      tags: ['prometheus'],
      auth: 'user',
      problems: ['unauthenticated'],
      responses: responses({ version: '2.42.0' }),
      handler: (ctx) =>
        inEnvelope(ctx, () =>
          Promise.resolve(answer(ctx, { version: '2.42.0', revision: 'meridian', branch: 'meridian', buildUser: 'meridian', buildDate: '', goVersion: '' })),
        ),
    }),
  ];
}
