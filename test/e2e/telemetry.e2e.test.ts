import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeInfluxLines, decodeOtlpMetrics, decodeRemoteWriteBody, otlpExportResponse, type DecodedPush } from '@meridian/protocols';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The telemetry protocols on the push path: what the real senders sent (recorded in
 * test/fixtures/protocols) is sent again to the api and stored exactly as the decoders read it;
 * and a caller's access decides which series are written. The senders themselves, live, are in
 * telemetry-senders.e2e.
 */
const FIXTURES = new URL('../fixtures/protocols/', import.meta.url).pathname;
type Captured = { readonly sender: string; readonly file: string; readonly path: string; readonly headers: Record<string, string> };
const manifest = JSON.parse(readFileSync(join(FIXTURES, 'manifest.json'), 'utf8')) as { requests: Captured[] };

const settings = isolatedSettings({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;

/** What the decoders make of a recorded request: the series the api must store. */
function decodedOf(c: Captured, body: Buffer, receivedAtMs: number): DecodedPush {
  if (c.sender === 'prometheus') return decodeRemoteWriteBody(body, '1.0');
  if (c.sender.startsWith('otlp')) return decodeOtlpMetrics(body, c.sender === 'otlp-json' ? 'json' : 'protobuf');
  return decodeInfluxLines(body, { precision: 'ns', receivedAtMs });
}

function send(c: Captured, body: Buffer, key: string) {
  const headers = { ...c.headers, authorization: `Bearer ${key}` };
  return fetch(`${api.url}${c.path}`, { method: 'POST', headers, body });
}

/** Stored (name, ts, value) of the given series names, sorted (names travel as the test's own text, quoted). */
async function stored(names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const list = names.map((n) => `'${n.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`).join(',');
  const text = await clickhouse(
    settings,
    `SELECT metric_name, ts, value FROM points WHERE metric_name IN (${list}) ORDER BY metric_name, ts, value FORMAT TabSeparated`,
  );
  return text.trim().split('\n').filter(Boolean);
}

const expectedRows = (pushes: readonly DecodedPush[]) =>
  pushes
    .flatMap((p) => p.series.flatMap((s) => s.timestamps.map((ts, i) => [s.name, ts, s.values[i]!] as const)))
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1] || a[2] - b[2]))
    .map(([n, ts, v]) => `${n.replaceAll('\\', '\\\\').replaceAll('\n', '\\n')}\t${ts}\t${v}`);

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('the recorded requests of the real senders', () => {
  for (const sender of ['prometheus', 'otlp-proto', 'otlp-json', 'influx']) {
    it(`${sender}: every request is answered as its protocol says, and its series are stored exactly as decoded`, async () => {
      const requests = manifest.requests.filter((c) => c.sender === sender);
      expect(requests.length).toBeGreaterThan(0);
      // The two OTLP encodings carry the same series: each sender's rows are looked at alone.
      await clickhouse(settings, 'TRUNCATE TABLE points');
      const pushes: DecodedPush[] = [];
      for (const c of requests) {
        const body = readFileSync(join(FIXTURES, c.file));
        const before = Date.now();
        const res = await send(c, body, admin);
        const text = Buffer.from(await res.arrayBuffer());
        if (sender.startsWith('otlp')) {
          expect(res.status).toBe(200);
          const empty = otlpExportResponse(null, sender === 'otlp-json' ? 'json' : 'protobuf');
          expect(typeof empty === 'string' ? text.toString() : text.equals(Buffer.from(empty))).toBe(typeof empty === 'string' ? empty : true);
        } else {
          expect(res.status, text.toString()).toBe(204);
        }
        // Line protocol without timestamps takes the time it arrived: decode with the same clock bounds.
        const decoded = decodedOf(c, body, before);
        pushes.push(decoded);
      }
      const names = [...new Set(pushes.flatMap((p) => p.series.map((s) => s.name)))];
      expect(names.length).toBeGreaterThan(0);
      const expected = expectedRows(pushes);
      if (sender === 'influx' && pushes.some((p) => p.series.some((s) => s.timestamps.some((ts) => ts >= Date.now() - 120_000)))) {
        // Lines without a timestamp are stamped on arrival: compare names and values only.
        const got = await waitFor('the influx points', async () => {
          const rows = await stored(names);
          return rows.length >= expected.length ? rows : undefined;
        });
        expect(
          got
            .map((r) => {
              const [n, , v] = r.split('\t');
              return `${n}\t${v}`;
            })
            .sort(),
        ).toEqual(
          expected
            .map((r) => {
              const [n, , v] = r.split('\t');
              return `${n}\t${v}`;
            })
            .sort(),
        );
        return;
      }
      const got = await waitFor(`the ${sender} points`, async () => {
        const rows = await stored(names);
        return rows.length >= expected.length ? rows : undefined;
      });
      expect(got).toEqual(expected);
    });
  }
});

describe('access decides what is written', () => {
  it('remote write: the series the caller may not write are refused with a 400 naming them; the rest are stored', async () => {
    const c = manifest.requests.find((r) => r.sender === 'prometheus')!;
    const body = readFileSync(join(FIXTURES, c.file));
    const decoded = decodeRemoteWriteBody(body, '1.0');
    const writable = decoded.series.filter((s) => s.name.startsWith('demo_'));
    expect(writable.length).toBeGreaterThan(0);
    expect(writable.length).toBeLessThan(decoded.series.length);
    const key = await createUser(api.url, admin, 'demo_writer', [{ match: 'prefix', value: 'demo_', access: 'rw' }]);
    await clickhouse(settings, 'TRUNCATE TABLE points');
    const res = await send(c, body, key);
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toMatch(/samples refused/);
    expect(text).toMatch(/no write access to this metric/);
    expect(res.headers.get('x-prometheus-remote-write-samples-written')).toBe(String(writable.reduce((n, s) => n + s.values.length, 0)));
    const got = await waitFor('the writable series', async () => {
      const rows = await stored(decoded.series.map((s) => s.name));
      return rows.length >= writable.reduce((n, s) => n + s.values.length, 0) ? rows : undefined;
    });
    expect(got).toEqual(expectedRows([{ ...decoded, series: writable }]));
  });

  it('OTLP: refused series are reported as partial_success; line protocol: as a partial write; a key in Basic or Token is read', async () => {
    const key = await createUser(api.url, admin, 'nobody_writes', [{ match: 'prefix', value: 'nothing.here', access: 'rw' }]);
    const otlpJson = manifest.requests.find((r) => r.sender === 'otlp-json')!;
    const res = await fetch(`${api.url}/api/v1/otlp/v1/metrics`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`agent:${key}`).toString('base64')}` },
      body: readFileSync(join(FIXTURES, otlpJson.file)),
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { partialSuccess?: { rejectedDataPoints: string; errorMessage: string } };
    expect(Number(answer.partialSuccess?.rejectedDataPoints)).toBeGreaterThan(0);
    expect(answer.partialSuccess?.errorMessage).toMatch(/no write access/);
    const lines = await fetch(`${api.url}/api/v2/write?org=o&bucket=b&precision=ms`, {
      method: 'POST',
      headers: { authorization: `Token ${key}` },
      body: 'cpu,host=a usage=1 1704067200000\n',
    });
    expect(lines.status).toBe(400);
    expect(await lines.json()).toMatchObject({ code: 'invalid', message: expect.stringMatching(/^partial write: .*no write access/) });
    const v1 = await fetch(`${api.url}/write?db=x&precision=s`, {
      method: 'POST',
      headers: { authorization: `Token ${key}` },
      body: 'cpu usage=1 1704067200\n',
    });
    expect(v1.status).toBe(400);
    expect(await v1.json()).toMatchObject({ error: expect.stringMatching(/^partial write/) });
    expect((await fetch(`${api.url}/api/v2/write`, { method: 'POST', headers: { authorization: 'Token not-a-key' }, body: 'cpu usage=1\n' })).status).toBe(401);
  });

  it('line protocol with a bad line stores the good ones and names the bad one; a bad precision is a 400', async () => {
    const res = await fetch(`${api.url}/api/v2/write?precision=s`, {
      method: 'POST',
      headers: { authorization: `Token ${admin}` },
      body: 'lp,host=a v=1 1704067200\nthis is not line protocol\nlp,host=b v=2 1704067201\n',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/line 2/);
    const rows = await waitFor('the good lines', async () => {
      const r = await stored(['lp_v{host="a"}', 'lp_v{host="b"}']);
      return r.length >= 2 ? r : undefined;
    });
    expect(rows).toEqual(['lp_v{host="a"}\t1704067200000\t1', 'lp_v{host="b"}\t1704067201000\t2']);
    expect(
      (await fetch(`${api.url}/api/v2/write?precision=fortnight`, { method: 'POST', headers: { authorization: `Token ${admin}` }, body: 'x v=1\n' })).status,
    ).toBe(400);
  });
});

describe('what one user may have in flight', () => {
  it('a telemetry request past MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER gets 429 before its body is read; the held one is stored', async () => {
    const tight = await startApi({ ...settings, MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: 1 });
    try {
      const body = Buffer.from('inflight_lp,host=a v=1 1704067200000000000\n');
      const url = new URL(`${tight.url}/api/v2/write?precision=ns`);
      // The first request sends half its body and waits: it holds the user's one slot.
      const first = request(url, { method: 'POST', headers: { authorization: `Token ${admin}`, 'content-length': String(body.length) } });
      const firstAnswer = new Promise<number>((resolve, reject) => {
        first.once('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        first.once('error', reject);
      });
      first.write(body.subarray(0, 10));
      await waitFor(
        'the first request to hold its slot',
        async () => {
          const second = await fetch(url, { method: 'POST', headers: { authorization: `Token ${admin}` }, body });
          const text = await second.text();
          return second.status === 429 ? text : undefined;
        },
        10_000,
        50,
      ).then((text) => expect(text).toMatch(/MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER/));
      first.end(body.subarray(10));
      expect(await firstAnswer).toBe(204);
      expect(
        await waitFor('the held line', async () => {
          const r = await stored(['inflight_lp_v{host="a"}']);
          return r.length > 0 ? r : undefined;
        }),
      ).toEqual(['inflight_lp_v{host="a"}\t1704067200000\t1']);
    } finally {
      await tight.close();
    }
  });
});
