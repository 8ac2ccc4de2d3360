import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

/** GET /api/v1/metrics against the real catalog (its own ClickHouse database): what a caller sees. */
const settings = isolatedSettings({ MERIDIAN_MAX_CATALOG_PAGE: '3' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;
let analyst: string; // r on the cat.pub prefix only

const T = (s: number) => Date.UTC(2024, 0, 1) + s * 1000;
// name → [timestamp seconds, value]; cat.pub.a has a duplicate timestamp (two points).
const data: Record<string, Array<[number, number]>> = {
  'cat.pub.a': [
    [0, 1],
    [0, 2],
    [60, 3],
    [7200, 4],
  ],
  'cat.pub.b': [[30, 1]],
  'cat.pub.c': [
    [10, 1],
    [20, 2],
  ],
  'cat.pub.d': [[5, 1]],
  'cat.priv.x': [
    [1, 1],
    [2, 2],
    [3, 3],
  ],
};

type Page = { metrics: Array<{ metric_name: string; points: number; first_timestamp: string; last_timestamp: string }>; next_after: string | null };

async function catalog(qs: Record<string, string>, key = analyst) {
  const res = await call(`${api.url}/api/v1/metrics?${new URLSearchParams(qs)}`, key);
  return { status: res.status, body: res.json as Page & { detail?: string } };
}
const names = (p: Page) => p.metrics.map((m) => m.metric_name);

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'cat.pub', access: 'r' }]);
  for (const [metric, values] of Object.entries(data)) {
    const res = await call(`${api.url}/api/v1/metrics/upload`, admin, {
      method: 'POST',
      body: { metric_name: metric, values: values.map(([s, value]) => ({ timestamp: formatTimestamp(T(s)), value })) },
    });
    expect(res.status, res.text).toBe(202);
    expect((await waitForTask(api.url, admin, res.json.task_id, 120_000)).status).toBe('succeeded');
  }
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('GET /api/v1/metrics', () => {
  it('lists only the metrics the caller may read, with counts equal to the rows a download returns', async () => {
    const first = await catalog({});
    expect(first.status).toBe(200);
    expect(names(first.body)).toEqual(['cat.pub.a', 'cat.pub.b', 'cat.pub.c']);
    expect(first.body.metrics[0]).toEqual({
      metric_name: 'cat.pub.a',
      points: 4,
      first_timestamp: formatTimestamp(T(0)),
      last_timestamp: formatTimestamp(T(7200)),
    });
    for (const m of first.body.metrics) {
      const csv = await fetch(`${api.url}/api/v1/metrics/download?${new URLSearchParams({ metrics: m.metric_name, max_rows: '1000' })}`, {
        headers: { Authorization: `Bearer ${analyst}` },
      });
      expect(m.points).toBe((await csv.text()).trimEnd().split('\n').length - 1);
      expect(m.points).toBe(data[m.metric_name]!.length);
    }
    const all = await catalog({ limit: '3' }, admin);
    expect(names(all.body)).toEqual(['cat.priv.x', 'cat.pub.a', 'cat.pub.b']);
    expect(all.body.metrics[0]!.points).toBe(3);
  });

  it('pages by name: next_after continues after the last name, null on the last page; limit is capped', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const page: { status: number; body: Page } = await catalog({ limit: '2', ...(after === null ? {} : { after }) });
      expect(page.status).toBe(200);
      seen.push(...names(page.body));
      after = page.body.next_after;
    } while (after !== null);
    expect(seen).toEqual(['cat.pub.a', 'cat.pub.b', 'cat.pub.c', 'cat.pub.d']);
    // An exact fit leaves no empty last page.
    const fit = await catalog({ limit: '2', after: 'cat.pub.b' });
    expect(fit.body).toMatchObject({ next_after: null });
    expect(names(fit.body)).toEqual(['cat.pub.c', 'cat.pub.d']);
    for (const limit of ['4', '0', 'x']) {
      const refused = await catalog({ limit });
      expect(refused.status, limit).toBe(400);
    }
  });

  it('the five patterns select as in a download, and never reveal a metric the caller may not read', async () => {
    expect(names((await catalog({ pattern: 'starts_with', metrics: 'cat.' })).body)).toEqual(['cat.pub.a', 'cat.pub.b', 'cat.pub.c']);
    expect(names((await catalog({ pattern: 'ends_with', metrics: '.x' })).body)).toEqual([]);
    expect(names((await catalog({ pattern: 'ends_with', metrics: '.x' }, admin)).body)).toEqual(['cat.priv.x']);
    expect(names((await catalog({ pattern: 'contains', metrics: 'pub.c' })).body)).toEqual(['cat.pub.c']);
    expect(names((await catalog({ pattern: 'single', metrics: 'cat.pub.b' })).body)).toEqual(['cat.pub.b']);
    expect(names((await catalog({ pattern: 'list', metrics: 'cat.pub.d,cat.pub.a' })).body)).toEqual(['cat.pub.a', 'cat.pub.d']);
    // Hidden and missing names: the same 404, alone or in a list.
    const hidden = await catalog({ pattern: 'single', metrics: 'cat.priv.x' });
    const missing = await catalog({ pattern: 'single', metrics: 'cat.nope' });
    const inList = await catalog({ pattern: 'list', metrics: 'cat.pub.a,cat.priv.x' });
    for (const r of [hidden, missing, inList]) expect(r.status).toBe(404);
    expect(hidden.body.detail).toBe(missing.body.detail);
    // A name that would break out of a quoted SQL string is only ever data.
    expect((await catalog({ pattern: 'single', metrics: "x' OR 1=1 --" }, admin)).status).toBe(404);
    expect(names((await catalog({ pattern: 'contains', metrics: "' OR ''='" }, admin)).body)).toEqual([]);
  });

  it('is documented in the OpenAPI document', async () => {
    const doc = (await call(`${api.url}/api/v1/openapi.json`, null)).json;
    const op = doc.paths['/api/v1/metrics'].get;
    expect(op.operationId).toBe('listMetrics');
    expect(op.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['after', 'limit', 'metrics', 'pattern']);
    expect(op.responses['200'].content['application/json'].schema).toBeDefined();
  });
});
