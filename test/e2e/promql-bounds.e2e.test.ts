import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { seedPoints } from '../support/seed-points.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The bounds of a PromQL query against real ClickHouse: samples read, series chosen and
 * answered, steps, time (503 and the ClickHouse queries killed), and a client that goes away.
 */
const settings = isolatedSettings({
  MERIDIAN_PROMQL_MAX_SAMPLES: '50000',
  MERIDIAN_PROMQL_MAX_SERIES: '3',
  MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES: '100',
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
  LOG_LEVEL: 'info',
});
let api: RunningApi;
/** The same data without the sample and step bounds: queries slow enough to time out or be abandoned. */
let unbounded: RunningApi;
let admin: string;
const T0 = Date.UTC(2024, 0, 1);
const BIG = 2_000_000;

type Answer = { status: string; errorType?: string; error?: string; data?: { resultType: string; result: unknown[] } };

async function query(path: string, params: Record<string, string>, signal?: AbortSignal, on = api): Promise<{ status: number; body: Answer }> {
  const res = await fetch(`${on.url}/prometheus/api/v1/${path}?${new URLSearchParams(params)}`, {
    headers: { Authorization: `Bearer ${admin}` },
    ...(signal ? { signal } : {}),
  });
  return { status: res.status, body: (await res.json()) as Answer };
}

/** The query ids the unbounded api logged, in order. */
const queryIds = () =>
  unbounded
    .logs()
    .filter((l) => l.msg === 'promql query')
    .map((l) => l.clickhouse_query_id as string);

/** ClickHouse queries of one PromQL query still running. */
async function running(id: string): Promise<number> {
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  return Number((await clickhouse(settings, `SELECT count() FROM system.processes WHERE query_id LIKE '${id}%'`)).trim());
}

/** Every sample of the 2M in 60 windows: tens of seconds of ClickHouse work unless stopped (a second off the minutes: not from the rollups). */
const SLOW = { query: 'max_over_time(big[1h])', start: String(T0 / 1000 + 1), end: String(T0 / 1000 + BIG), step: '60' };

beforeAll(async () => {
  [api, unbounded] = await Promise.all([
    startApi(settings),
    startApi({ ...settings, MERIDIAN_PROMQL_MAX_SAMPLES: 100_000_000, MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES: 1_000_000 }),
  ]);
  admin = await bootstrapAdmin(settings);
  await Promise.all([api.api.accounts.syncToEnd(), unbounded.api.accounts.syncToEnd()]);
  // Canonical names with labels: seedPoints takes plain names only; these hold no quote or backslash for the SQL.
  for (const job of ['a', 'b', 'c', 'd']) {
    await clickhouse(
      settings,
      `INSERT INTO points SELECT 'small{job="${job}"}', ${T0} + number * 15000, toFloat64(number), ${T0}, 'test-seed', 65535, 0, toUInt32(number) FROM numbers(100)`,
    );
  }
  await seedPoints(settings, { metric: 'big', count: BIG, fromMs: T0, stepMs: 1000, value: 'number % 1000' });
}, 180_000);
afterAll(async () => {
  await Promise.all([api?.close(), unbounded?.close()]);
});

describe('PromQL bounds', () => {
  it('answers within them', async () => {
    const r = await query('query', { query: 'sum(rate(small{job!="d"}[5m]))', time: String(T0 / 1000 + 1200) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data!.result).toHaveLength(1);
  });

  it('refuses a query reading more samples than MERIDIAN_PROMQL_MAX_SAMPLES: 422', async () => {
    // A second off the hours: the day's 86,401 raw points are read, not its rollup.
    const r = await query('query', { query: 'count_over_time(big[1d])', time: String(T0 / 1000 + 86_401) });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ status: 'error', errorType: 'execution', error: expect.stringContaining('MERIDIAN_PROMQL_MAX_SAMPLES') });
    // On the hour, the same window is 24 hourly buckets and the point at its end.
    const hourly = await query('query', { query: 'count_over_time(big[1d])', time: String(T0 / 1000 + 86_400) });
    expect(hourly.status, JSON.stringify(hourly.body)).toBe(200);
    expect(hourly.body.data!.result).toEqual([{ metric: {}, value: [T0 / 1000 + 86_400, '86401'] }]);
  });

  it('refuses a selector or an answer of more series than MERIDIAN_PROMQL_MAX_SERIES: 422', async () => {
    const selector = await query('query', { query: 'small', time: String(T0 / 1000 + 600) });
    expect(selector.status).toBe(422);
    expect(selector.body.error).toContain('MERIDIAN_PROMQL_MAX_SERIES');
    const narrowed = await query('query', { query: 'small{job!="d"}', time: String(T0 / 1000 + 600) });
    expect(narrowed.status).toBe(200);
    const listing = await query('series', { 'match[]': 'small' });
    expect([listing.status, listing.body.errorType]).toEqual([422, 'execution']);
    expect(listing.body.error).toContain('MERIDIAN_PROMQL_MAX_SERIES');
  });

  it('refuses more steps than MERIDIAN_PROMQL_MAX_POINTS_PER_SERIES: 400, as Prometheus words it', async () => {
    const r = await query('query_range', { query: 'small{job="a"}', start: String(T0 / 1000), end: String(T0 / 1000 + 101), step: '1' });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ errorType: 'bad_data', error: expect.stringContaining('exceeded maximum resolution of 100 points per timeseries') });
  });

  it("answers odd requests with Prometheus' errors, never a 5xx", async () => {
    const t = String(T0 / 1000 + 600);
    const cases: Array<[string, Record<string, string>, number]> = [
      ['query', { query: 'small{job="a"}', time: '1e300' }, 400],
      ['query', { query: 'small{job="a"}', time: 'Infinity' }, 400],
      ['query', { query: 'small{job="a"}[100000000y]', time: t }, 400],
      ['query', { query: 'small{job="a"} offset 99999999y', time: t }, 400],
      ['query', { query: '', time: t }, 400],
      ['query', { query: 'small{job=~"(["}', time: t }, 400],
      ['query', { query: 'small{job="a"}\u0000', time: t }, 400],
      ['query', { query: 'count_values("x", small)', time: t }, 422],
      ['query_range', { query: 'small{job="a"}[5m]', start: t, end: t, step: '1' }, 400],
      ['query_range', { query: 'small{job="a"}', start: t, end: t, step: '1e300' }, 400],
      ['query_range', { query: 'small{job="a"}', start: 'NaN', end: t, step: '1' }, 400],
      ['series', {}, 400],
      ['series', { 'match[]': 'rate(small[5m])' }, 400],
      ['label/a-b/values', {}, 400],
    ];
    for (const [path, params, status] of cases) {
      const r = await query(path, params);
      expect([r.status, r.body.status], `${path} ${JSON.stringify(params)}: ${JSON.stringify(r.body)}`).toEqual([status, 'error']);
    }
    const wrongType = await fetch(`${api.url}/prometheus/api/v1/query`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(wrongType.status).toBe(415);
    const form = await fetch(`${api.url}/prometheus/api/v1/query`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ query: 'small{job="b"}', time: t }),
    });
    expect(form.status).toBe(200);
    expect(((await form.json()) as Answer).data!.result).toHaveLength(1);
  });

  it('stops a query past its time: 503 timeout, and its ClickHouse queries are killed', async () => {
    const before = queryIds().length;
    const started = performance.now();
    const r = await query('query_range', { ...SLOW, timeout: '0.5' }, undefined, unbounded);
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(r.body).toMatchObject({ status: 'error', errorType: 'timeout' });
    expect(performance.now() - started).toBeLessThan(5000);
    const id = queryIds()[before]!;
    await waitFor('the killed query gone', async () => ((await running(id)) === 0 ? true : undefined), 5000);
  });

  it('stops the ClickHouse queries of a client that goes away', async () => {
    const before = queryIds().length;
    const abort = new AbortController();
    const pending = query('query_range', SLOW, abort.signal, unbounded).catch((e: unknown) => e);
    const id = await waitFor('the query logged', () => queryIds()[before], 10_000);
    await waitFor('the query running in ClickHouse', async () => ((await running(id)) > 0 ? true : undefined), 10_000);
    abort.abort();
    expect(await pending).toBeInstanceOf(Error);
    await waitFor('the abandoned query gone', async () => ((await running(id)) === 0 ? true : undefined), 5000);
  });
});
