import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * A single-series query reads its samples while the catalog is read (apps/api/src/prometheus/ahead.ts):
 * the answer must be the one the read after the catalog gives, the read must be used only when
 * the plan chooses exactly that series, and a series the caller may not read must still look
 * like one that does not exist.
 */
const settings = isolatedSettings({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0', LOG_LEVEL: 'info' });
let api: RunningApi;
let admin: string;
/** May read `solo{job="a"}` and nothing else of solo. */
let jobA: string;
const T0 = Date.UTC(2024, 0, 1);

type Answer = { status: string; data?: { resultType: string; result: Array<{ metric: Record<string, string>; values?: unknown[] }> } };

async function rangeQuery(query: string, key = admin, end = T0 / 1000 + 6000): Promise<{ status: number; body: Answer; readAhead: string }> {
  const params = new URLSearchParams({ query, start: String(T0 / 1000), end: String(end), step: '60' });
  const res = await fetch(`${api.url}/prometheus/api/v1/query_range?${params}`, { headers: { Authorization: `Bearer ${key}` } });
  const body = (await res.json()) as Answer;
  const logged = api.logs().filter((l) => l.msg === 'promql query');
  return { status: res.status, body, readAhead: String(logged.at(-1)?.read_ahead) };
}

/** Points of one series (test-made names: no quote or backslash inside the SQL's string). */
async function insert(name: string, count: number, fromMs: number, value: string): Promise<void> {
  await clickhouse(
    settings,
    `INSERT INTO points SELECT '${name}', ${fromMs} + number * 15000, ${value}, ${Date.now()}, 'test-seed', 65535, 0, toUInt32(number) FROM numbers(${count})`,
  );
}

beforeAll(async () => {
  api = await startApi(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  jobA = await createUser(api.url, admin, 'job-a', [{ match: 'exact', value: 'solo{job="a"}', access: 'r' }]);
  await api.api.accounts.syncToEnd();
  await insert('solo{job="a"}', 400, T0, 'toFloat64(number)');
  await insert('solo{job="b"}', 400, T0, 'toFloat64(number) * 2');
  await insert('lone', 400, T0, 'toFloat64(number % 7)');
}, 120_000);
afterAll(async () => {
  await api?.close();
});

describe('PromQL read ahead of a single series', () => {
  it('answers as the read after the catalog does', async () => {
    const ahead = await rangeQuery('solo{job="a"}');
    expect(ahead.readAhead).toBe('taken');
    // A regular expression is never read ahead: the same series through the plan alone.
    const planned = await rangeQuery('solo{job=~"a"}');
    expect(planned.readAhead).toBe('none');
    expect(ahead.status).toBe(200);
    expect(ahead.body).toEqual(planned.body);
    expect(ahead.body.data!.result).toHaveLength(1);
    expect(ahead.body.data!.result[0]!.values!.length).toBeGreaterThan(90);
    const bare = await rangeQuery('lone * 2');
    expect(bare.readAhead).toBe('taken');
    expect(bare.body).toEqual((await rangeQuery('{__name__=~"lone"} * 2')).body);
  });

  it('is not used when the selector chooses other series than the one it names', async () => {
    // `solo` names the series without labels, which does not exist; both labelled ones match.
    const r = await rangeQuery('solo');
    expect(r.readAhead).toBe('dropped');
    expect(r.body.data!.result.map((s) => s.metric.job).sort()).toEqual(['a', 'b']);
  });

  it('shows a series the caller may not read as one that does not exist', async () => {
    const hidden = await rangeQuery('solo{job="b"}', jobA);
    const missing = await rangeQuery('solo{job="z"}', jobA);
    // No name the caller may not read is read ahead, whether it exists or not: nothing tells them apart.
    expect(hidden.readAhead).toBe('none');
    expect(hidden).toEqual(missing);
    expect(hidden.body.data).toEqual({ resultType: 'matrix', result: [] });
    // An admin's query of a name that does not exist is read ahead, then dropped.
    expect((await rangeQuery('solo{job="z"}')).readAhead).toBe('dropped');
    const own = await rangeQuery('solo{job="a"}', jobA);
    expect(own.readAhead).toBe('taken');
    expect(own.body.data!.result).toHaveLength(1);
  });

  it('sees points as soon as they are stored, a new series and new points of one', async () => {
    const end = T0 / 1000 + 12_000;
    expect((await rangeQuery('fresh', admin, end)).body.data!.result).toEqual([]);
    await insert('fresh', 10, T0, '1');
    const first = await rangeQuery('fresh', admin, end);
    expect(first.readAhead).toBe('taken');
    const stepsOf = (a: Answer) => a.data!.result[0]?.values?.length ?? 0;
    const before = stepsOf(first.body);
    expect(before).toBeGreaterThan(0);
    await insert('fresh', 10, T0 + 6_000_000, '2');
    expect(stepsOf((await rangeQuery('fresh', admin, end)).body)).toBeGreaterThan(before);
  });
});
