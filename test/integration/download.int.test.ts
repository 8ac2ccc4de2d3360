import { randomUUID } from 'node:crypto';
import { gunzipSync, inflateRawSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  cancelQueries,
  decodeCursor,
  encodeCursor,
  nameOf,
  nativePointColumns,
  planDownload,
  streamDownload,
  type DownloadCursor,
  type DownloadRequest,
} from '@meridian/clickhouse';
import { formatTimestamp } from '@meridian/domain';
import { itOnServer } from '../support/clickhouse-front.ts';
import { waitFor } from '../support/wait.ts';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * The query side of GET /api/v1/metrics/download against a real ClickHouse: exact bytes,
 * paging, gzip, cancellation and injection. Rows are inserted as RowBinary so that every
 * double reaches ClickHouse bit for bit.
 */

type Point = { name: string; ts: number; value: number; updated_at: number; p: number; o: number; r: number };

const T = 1_700_000_000_000; // 2023-11-14T22:13:20Z
const CPU = 'cpu:load';
const WEIRD = 'we"ird\\name %_:ü日本🎉';
const EVIL = "x'); DROP TABLE points; --";
/** Names a ';'-separated spreadsheet would split: quoted like names with ',' or '"'. */
const SEMI = ['sum;=1+2', 'a;b"c', 'plain'];
const HEADER = 'metric_name,timestamp,metric_numeric_value,updated_at\n';

const fixture: Point[] = [
  { name: CPU, ts: T + 60_123, value: 1.25, updated_at: T + 61_000, p: 0, o: 10, r: 1 },
  { name: 'other', ts: T, value: 7, updated_at: T + 1000, p: 2, o: 2, r: 0 },
  { name: CPU, ts: T, value: 0.5, updated_at: T + 1000, p: 0, o: 10, r: 0 },
  { name: WEIRD, ts: T + 5, value: 3, updated_at: T + 1000, p: 1, o: 3, r: 1 },
  { name: CPU, ts: T + 60_123, value: 2.5, updated_at: T + 120_500, p: 0, o: 11, r: 0 },
  { name: EVIL, ts: T, value: 42, updated_at: T + 1000, p: 2, o: 1, r: 0 },
  { name: CPU, ts: 0, value: -3, updated_at: 999, p: 0, o: 12, r: 0 },
  { name: CPU, ts: T + 60_123, value: 1.25, updated_at: T + 61_000, p: 0, o: 10, r: 2 }, // the same point uploaded twice
  { name: WEIRD, ts: T + 5, value: 0.1, updated_at: T + 1000, p: 1, o: 3, r: 0 },
  { name: CPU, ts: 4_291_747_199_999, value: 123.456, updated_at: 4_291_747_199_999, p: 0, o: 12, r: 1 },
];

const EXPECTED_CSV =
  HEADER +
  'cpu:load,1970-01-01T00:00:00+0000,-3,1970-01-01T00:00:00.999+0000\n' +
  'cpu:load,2023-11-14T22:13:20+0000,0.5,2023-11-14T22:13:21+0000\n' +
  'cpu:load,2023-11-14T22:14:20.123+0000,1.25,2023-11-14T22:14:21+0000\n' +
  'cpu:load,2023-11-14T22:14:20.123+0000,1.25,2023-11-14T22:14:21+0000\n' +
  'cpu:load,2023-11-14T22:14:20.123+0000,2.5,2023-11-14T22:15:20.500+0000\n' +
  'cpu:load,2105-12-31T23:59:59.999+0000,123.456,2105-12-31T23:59:59.999+0000\n' +
  '"we""ird\\name %_:ü日本🎉",2023-11-14T22:13:20.005+0000,0.1,2023-11-14T22:13:21+0000\n' +
  '"we""ird\\name %_:ü日本🎉",2023-11-14T22:13:20.005+0000,3,2023-11-14T22:13:21+0000\n' +
  `"x'); DROP TABLE points; --",2023-11-14T22:13:20+0000,42,2023-11-14T22:13:21+0000\n`;

const row = (metric_name: string, timestamp: string, metric_numeric_value: number, updated_at: string) => ({
  metric_name,
  timestamp,
  metric_numeric_value,
  updated_at,
});
const EXPECTED_JSON = [
  row(CPU, '1970-01-01T00:00:00+0000', -3, '1970-01-01T00:00:00.999+0000'),
  row(CPU, '2023-11-14T22:13:20+0000', 0.5, '2023-11-14T22:13:21+0000'),
  row(CPU, '2023-11-14T22:14:20.123+0000', 1.25, '2023-11-14T22:14:21+0000'),
  row(CPU, '2023-11-14T22:14:20.123+0000', 1.25, '2023-11-14T22:14:21+0000'),
  row(CPU, '2023-11-14T22:14:20.123+0000', 2.5, '2023-11-14T22:15:20.500+0000'),
  row(CPU, '2105-12-31T23:59:59.999+0000', 123.456, '2105-12-31T23:59:59.999+0000'),
  row(WEIRD, '2023-11-14T22:13:20.005+0000', 0.1, '2023-11-14T22:13:21+0000'),
  row(WEIRD, '2023-11-14T22:13:20.005+0000', 3, '2023-11-14T22:13:21+0000'),
  row(EVIL, '2023-11-14T22:13:20+0000', 42, '2023-11-14T22:13:21+0000'),
];

/** 25 rows over three metrics, duplicates of one ts included, inserted out of order. */
const PAGED = ['page:a', 'page:b', 'page:c'];
const paged: Point[] = PAGED.flatMap((name, m) =>
  Array.from({ length: m === 0 ? 9 : 8 }, (_, i) => ({
    name,
    ts: T + Math.floor(i / 2) * 1000, // two rows per ts
    value: m * 100 + i,
    updated_at: T + 5000 + (i % 2) * 7, // the second row of a ts is newer
    p: m,
    o: 100 + i,
    r: 0,
  })),
).reverse();

/** In UTF-8 byte order; JavaScript's UTF-16 order puts 🎉 (a surrogate pair) before ～ (U+FF5E). */
const ORDERED = ['order:Z', 'order:z', 'order:ü', 'order:日', 'order:～', 'order:🎉'];

/** Values whose shortest form is tricky; inserted bit for bit. */
/* eslint-disable no-loss-of-precision -- the literals' rounding is what the test is about */
const TRICKY = [
  0.1,
  1 / 3,
  1e21,
  1e-7,
  123456789012345680000,
  -0,
  5e-324,
  1.7976931348623157e308,
  3,
  0.1 + 0.2,
  1e-6,
  1.5e-323,
  2.2250738585072014e-308,
  -1e-300,
  9007199254740993,
  1e22,
  123.456,
];
/* eslint-enable no-loss-of-precision */

const TIMES = [0, 1, 999, 1000, 59_999, 86_399_999, 86_400_000, 951_782_400_000, 1_583_020_799_999, 4_291_747_199_000, 4_291_747_199_999];
for (let i = 0; i < 200; i++) TIMES.push(Math.floor(((i * 7919) % 200) * 21_458_736_000 + i * 3)); // spread over 1970..2105

/** Big enough to keep a query busy for a moment: 3M rows over 100 metrics. */
const BIG = Array.from({ length: 100 }, (_, i) => `big:${String(i).padStart(2, '0')}`);

describe('metrics download against a real ClickHouse', () => {
  const { conn, client } = scratchDatabase();

  beforeAll(async () => {
    await insertRowBinary([
      ...fixture,
      ...paged,
      ...ORDERED.map((name, i) => ({ name, ts: T, value: i, updated_at: T, p: 0, o: 0, r: 0 })),
      ...TRICKY.map((value, i) => ({ name: 'floats', ts: T + i, value, updated_at: T, p: 0, o: 0, r: i })),
      ...TIMES.map((ts, i) => ({ name: 'times', ts, value: i, updated_at: TIMES[TIMES.length - 1 - i]!, p: 0, o: 0, r: i })),
      ...SEMI.map((name, i) => ({ name, ts: T, value: i, updated_at: T, p: 0, o: 0, r: 0 })),
    ]);
    await client.command({
      query: `INSERT INTO points SELECT concat('big:', substring(toString(100 + number % 100), 2)) AS metric_name, ${T} + intDiv(number, 100) * 10 AS ts,
              number / 3 AS value, ${T} AS updated_at, 'big' AS task_id, toUInt16(0) AS kafka_partition, number AS kafka_offset, toUInt32(0) AS row_in_batch
              FROM system.numbers LIMIT 3000000`,
    });
  });

  const request = (change: Partial<DownloadRequest> = {}): DownloadRequest => ({
    metricNames: [CPU, WEIRD, EVIL],
    fromMs: 0,
    toMs: 4_291_747_199_999,
    maxRows: 1000,
    after: null,
    format: 'csv',
    latestOnly: false,
    gzip: false,
    queryId: randomUUID(),
    ...change,
  });

  /** One page as the api serves it: plan, then stream bounded by the plan. */
  async function page(change: Partial<DownloadRequest> = {}): Promise<{ body: Buffer; next: DownloadCursor | null; contentEncoding: string | null }> {
    const req = request(change);
    const plan = await planDownload(conn, req);
    const stream = await streamDownload(conn, req, { plan });
    return { body: await readAll(stream.body), next: plan.next, contentEncoding: stream.contentEncoding };
  }

  /** The same page split into parts of one or two metrics each (chunks.ts). */
  async function pageInParts(change: Partial<DownloadRequest> = {}): Promise<{ body: Buffer; next: DownloadCursor | null }> {
    const req = request(change);
    const plan = await planDownload(conn, req);
    const stream = await streamDownload(conn, req, { plan, chunks: { rowsOf: () => 1, sizes: { firstRows: 1, maxRows: 2 } } });
    return { body: await readAll(stream.body), next: plan.next };
  }

  /** Every page of a download (at most 10), following `next` through the encoded cursor, as a client would. */
  async function allPages(
    open: (change: Partial<DownloadRequest>) => Promise<{ body: Buffer; next: DownloadCursor | null }>,
    change: Partial<DownloadRequest>,
  ): Promise<{ lines: string[]; sizes: number[] }> {
    const lines: string[] = [];
    const sizes: number[] = [];
    let after: DownloadCursor | null = null;
    for (let i = 0; i < 10; i++) {
      const p = await open({ ...change, after });
      const pageLines = dataLines(p.body);
      sizes.push(pageLines.length);
      lines.push(...pageLines);
      if (p.next === null) break;
      after = decodeCursor(encodeCursor(p.next));
    }
    return { lines, sizes };
  }

  async function insertRowBinary(points: readonly Point[]): Promise<void> {
    const res = await fetch(`${conn.url}/?${new URLSearchParams({ database: conn.database, query: 'INSERT INTO points FORMAT RowBinary' })}`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from(`${conn.username}:${conn.password}`).toString('base64')}` },
      body: rowBinary(points),
    });
    if (!res.ok) throw new Error(`insert failed: ${res.status} ${await res.text()}`);
  }

  async function running(queryId: string): Promise<number> {
    const rows = await (
      await client.query({ query: `SELECT count() AS n FROM system.processes WHERE query_id LIKE '${queryId}%'`, format: 'JSONEachRow' })
    ).json<{ n: string }>();
    return Number(rows[0]!.n);
  }

  it('writes the exact CSV bytes: header, ordered rows, duplicates, quoting, timestamps with and without ms', async () => {
    const { body, next, contentEncoding } = await page();
    expect(body.toString('utf8')).toBe(EXPECTED_CSV);
    expect(next).toBeNull();
    expect(contentEncoding).toBeNull();
  });

  it('writes JSON that parses to exactly the expected array', async () => {
    const { body } = await page({ format: 'json' });
    expect(JSON.parse(body.toString('utf8'))).toEqual(EXPECTED_JSON);
  });

  it("quotes a name holding a semicolon, so a ';'-separated spreadsheet keeps it in one cell", async () => {
    const csv = (await page({ metricNames: SEMI })).body.toString('utf8');
    expect(csv).toBe(
      HEADER +
        '"a;b""c",2023-11-14T22:13:20+0000,1,2023-11-14T22:13:20+0000\n' +
        'plain,2023-11-14T22:13:20+0000,2,2023-11-14T22:13:20+0000\n' +
        '"sum;=1+2",2023-11-14T22:13:20+0000,0,2023-11-14T22:13:20+0000\n',
    );
  });

  it('returns exactly the rows of a name that looks like SQL, and the table survives', async () => {
    const csv = (await page({ metricNames: [EVIL] })).body.toString('utf8');
    expect(csv).toBe(`${HEADER}"x'); DROP TABLE points; --",2023-11-14T22:13:20+0000,42,2023-11-14T22:13:21+0000\n`);
    const json = JSON.parse((await page({ metricNames: [EVIL], format: 'json' })).body.toString('utf8')) as unknown[];
    expect(json).toEqual([EXPECTED_JSON[8]]);
    const rows = await (
      await client.query({ query: `SELECT count() AS n FROM points WHERE metric_name = 'other'`, format: 'JSONEachRow' })
    ).json<{ n: string }>();
    expect(rows[0]!.n).toBe('1');
  });

  it('orders metrics by their UTF-8 bytes, as ClickHouse compares strings (not as JavaScript does)', async () => {
    const csv = (await page({ metricNames: ORDERED.toReversed() })).body.toString('utf8');
    expect(dataLines(Buffer.from(csv)).map((l) => l.split(',')[0])).toEqual(ORDERED);
  });

  it('treats % and _ in names literally', async () => {
    const csv = (await page({ metricNames: ['%', '_', 'cpu_load', 'cpu%'] })).body.toString('utf8');
    expect(csv).toBe(HEADER);
  });

  it('answers an empty result with the header alone, or []', async () => {
    for (const metricNames of [['no such metric'], []]) {
      expect((await page({ metricNames })).body.toString('utf8')).toBe(HEADER);
      expect(JSON.parse((await page({ metricNames, format: 'json' })).body.toString('utf8'))).toEqual([]);
    }
    const outside = await page({ fromMs: T + 200_000, toMs: T + 300_000, format: 'json' });
    expect(JSON.parse(outside.body.toString('utf8'))).toEqual([]);
    expect(outside.next).toBeNull();
  });

  it('keeps only the newest row of each (metric_name, ts) with latestOnly', async () => {
    const csv = (await page({ latestOnly: true })).body.toString('utf8');
    expect(csv).toBe(
      HEADER +
        'cpu:load,1970-01-01T00:00:00+0000,-3,1970-01-01T00:00:00.999+0000\n' +
        'cpu:load,2023-11-14T22:13:20+0000,0.5,2023-11-14T22:13:21+0000\n' +
        'cpu:load,2023-11-14T22:14:20.123+0000,2.5,2023-11-14T22:15:20.500+0000\n' + // the newest updated_at wins
        'cpu:load,2105-12-31T23:59:59.999+0000,123.456,2105-12-31T23:59:59.999+0000\n' +
        '"we""ird\\name %_:ü日本🎉",2023-11-14T22:13:20.005+0000,3,2023-11-14T22:13:21+0000\n' + // same updated_at: the later row of the upload
        `"x'); DROP TABLE points; --",2023-11-14T22:13:20+0000,42,2023-11-14T22:13:21+0000\n`,
    );
    const json = JSON.parse((await page({ latestOnly: true, format: 'json' })).body.toString('utf8')) as unknown[];
    expect(json).toEqual([EXPECTED_JSON[0], EXPECTED_JSON[1], EXPECTED_JSON[4], EXPECTED_JSON[5], EXPECTED_JSON[7], EXPECTED_JSON[8]]);
  });

  it('includes both date bounds', async () => {
    const inside = (await page({ fromMs: T + 5, toMs: T + 60_123 })).body.toString('utf8');
    const lines = EXPECTED_CSV.split('\n');
    expect(inside).toBe(HEADER + [3, 4, 5, 7, 8].map((i) => `${lines[i]}\n`).join('')); // cpu:load at toMs, we"ird at fromMs
    const excluded = (await page({ fromMs: T + 6, toMs: T + 60_122 })).body.toString('utf8');
    expect(excluded).toBe(HEADER);
  });

  it('pages through 25 rows in pages of 10, every row exactly once and in order', async () => {
    const full = await page({ metricNames: PAGED });
    const all = dataLines(full.body);
    expect(all).toHaveLength(25);
    const { lines, sizes } = await allPages(page, { metricNames: PAGED, maxRows: 10 });
    expect(sizes).toEqual([10, 10, 5]);
    expect(lines).toEqual(all);
  });

  it('pages with latestOnly through each (metric_name, ts) once', async () => {
    const all = dataLines((await page({ metricNames: PAGED, latestOnly: true })).body);
    expect(all).toHaveLength(13); // ceil(9/2) + 4 + 4
    expect((await allPages(page, { metricNames: PAGED, latestOnly: true, maxRows: 4 })).lines).toEqual(all);
  });

  it('planned by groups of metrics from an estimate, right, too low or too high, pages end where counting every row ends them', async () => {
    const exact = (name: string) => (name === 'page:a' ? 9 : 8);
    const estimates = [exact, () => 1, () => 1000, () => 0];
    for (const latestOnly of [false, true]) {
      for (const maxRows of [1, 4, 8, 9, 10, 16, 17, 24, 25, 26]) {
        const ends = async (rowsOf?: (name: string) => number) => {
          const cursors: Array<DownloadCursor | null> = [];
          let after: DownloadCursor | null = null;
          for (let i = 0; i < 30; i++) {
            const { next } = await planDownload(conn, request({ metricNames: PAGED, maxRows, latestOnly, after }), rowsOf ? { rowsOf } : {});
            cursors.push(next);
            if (next === null) break;
            after = next;
          }
          return cursors;
        };
        const counted = await ends();
        for (const rowsOf of estimates) expect(await ends(rowsOf), `maxRows ${maxRows}, latestOnly ${latestOnly}`).toEqual(counted);
      }
    }
  });

  it('planned by groups, pages of 10 through 25 rows give every row once and in order, no page empty', async () => {
    const all = dataLines((await page({ metricNames: PAGED })).body);
    const grouped = async (change: Partial<DownloadRequest>) => {
      const req = request(change);
      const plan = await planDownload(conn, req, { rowsOf: () => 3 });
      const stream = await streamDownload(conn, req, { plan });
      return { body: await readAll(stream.body), next: plan.next };
    };
    for (const maxRows of [9, 17]) {
      const { lines, sizes } = await allPages(grouped, { metricNames: PAGED, maxRows });
      expect(lines).toEqual(all);
      expect(sizes.every((n) => n > 0)).toBe(true);
    }
  });

  it('without a plan, streams the first maxRows rows after the cursor', async () => {
    const req = request({ metricNames: PAGED, maxRows: 10 });
    const planned = await page({ metricNames: PAGED, maxRows: 10 });
    const stream = await streamDownload(conn, req);
    expect(await readAll(stream.body)).toEqual(planned.body);
    const json = await streamDownload(conn, { ...req, format: 'json', queryId: randomUUID() });
    expect(JSON.parse((await readAll(json.body)).toString('utf8'))).toHaveLength(10);
  });

  it('gzips in ClickHouse: the stream decodes to the plain bytes', async () => {
    for (const format of ['csv', 'json'] as const) {
      const plain = await page({ format });
      const zipped = await page({ format, gzip: true });
      expect(zipped.contentEncoding).toBe('gzip');
      expect(zipped.body.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
      expect(firstGzipMemberLength(zipped.body)).toBe(zipped.body.length); // one member: curl and browsers read no further
      expect(gunzipSync(zipped.body)).toEqual(plain.body);
    }
    const empty = await page({ metricNames: [], format: 'json', gzip: true });
    expect(gunzipSync(empty.body).toString('utf8')).toMatch(/^\[\s*\]\s*$/);
  });

  it('prints every double as a decimal that reads back to the same double', async () => {
    const lines = dataLines((await page({ metricNames: ['floats'] })).body);
    const printed = lines.map((l) => l.split(',')[2]!);
    expect(printed).toHaveLength(TRICKY.length);
    printed.forEach((text, i) => {
      const v = TRICKY[i]!;
      expect(Object.is(Number.parseFloat(text), v), `${text} for ${v}`).toBe(true);
      // JavaScript's shortest form, except that 18.16 writes 1e21 where JavaScript writes 1e+21
      const js = Object.is(v, -0) ? '-0' : String(v);
      expect([js, js.replace('e+', 'e')], `${text} for ${v}`).toContain(text);
    });
    expect(printed[TRICKY.indexOf(-0)]).toBe('-0');
    const json = JSON.parse((await page({ metricNames: ['floats'], format: 'json' })).body.toString('utf8')) as { metric_numeric_value: number }[];
    expect(json.map((r) => r.metric_numeric_value)).toEqual(TRICKY);
  });

  it('prints timestamps exactly like the domain formatter, over the whole accepted range', async () => {
    const lines = dataLines((await page({ metricNames: ['times'] })).body);
    const expected = TIMES.map((ts, i) => ({ ts, updated_at: TIMES[TIMES.length - 1 - i]!, i }))
      .sort((a, b) => a.ts - b.ts || a.updated_at - b.updated_at || a.i - b.i)
      .map((x) => `times,${formatTimestamp(x.ts)},${x.i},${formatTimestamp(x.updated_at)}`);
    expect(lines).toEqual(expected);
  });

  it('streams JSON over many blocks with a comma between every two objects', async () => {
    const { body, next } = await page({ metricNames: BIG, maxRows: 200_000, format: 'json' });
    const rows = JSON.parse(body.toString('utf8')) as { metric_name: string; timestamp: string }[];
    expect(rows).toHaveLength(200_000);
    expect(next).toEqual({ metric_name: 'big:06', ts: T + 19_999 * 10, updated_at: T, partition: 0, offset: 1_999_906, row: 0 });
    expect(rows[0]!.metric_name).toBe('big:00');
    expect(rows.at(-1)!.metric_name).toBe('big:06');
  });

  it("split into parts, one query per group of metrics, a page is byte for byte the single query's", async () => {
    for (const change of [
      {},
      { format: 'json' as const },
      { latestOnly: true },
      { latestOnly: true, format: 'json' as const },
      { metricNames: ORDERED.toReversed() },
      { metricNames: [...PAGED, 'no such metric', CPU] },
    ]) {
      const whole = await page(change);
      const parts = await pageInParts(change);
      expect(parts.body.toString('utf8'), JSON.stringify(change)).toBe(whole.body.toString('utf8'));
    }
    // A window where the first and last groups are empty: the header or [] still frame the body.
    for (const format of ['csv', 'json'] as const) {
      const change = { metricNames: [...PAGED, 'aaa none', 'zzz none'], fromMs: T + 5, toMs: T + 60_123, format };
      expect((await pageInParts(change)).body.toString('utf8')).toBe((await page(change)).body.toString('utf8'));
    }
    expect(JSON.parse((await pageInParts({ metricNames: ['a', 'b', 'c'], format: 'json' })).body.toString('utf8'))).toEqual([]);
  });

  it("gives typed columns (Native blocks of max_block_size rows) holding exactly the CSV's rows, whole or in parts, with latestOnly too", async () => {
    const columns = async ({ body, names }: { body: NodeJS.ReadableStream; names: readonly string[] }) => {
      const rows: Array<[string, number, number, number]> = [];
      const sizes: number[] = [];
      for await (const b of nativePointColumns(body as AsyncIterable<Buffer>, names)) {
        sizes.push(b.rows);
        for (let i = 0; i < b.rows; i++) {
          const name = nameOf(b, i);
          rows.push([name, Number(b.timestamps[i]), b.values[i]!, Number(b.updatedAt[i])]);
        }
      }
      return { rows, sizes };
    };
    for (const change of [{}, { latestOnly: true }, { metricNames: PAGED }, { metricNames: ['floats'] }, { metricNames: ['times'] }]) {
      // The CSV's rows read back: its doubles are the shortest decimals that read back exactly.
      const csv = dataLines((await page(change)).body).map((line) => {
        const [, quoted, ts, value, updatedAt] = /^("(?:[^"]|"")*"|[^,]*),([^,]+),([^,]+),([^,]+)$/.exec(line)!;
        const name = quoted!.startsWith('"') ? quoted!.slice(1, -1).replace(/""/g, '"') : quoted!;
        return [name, Date.parse(ts!.replace(/(\d\d)(\d\d)$/, '$1:$2')), Number(value), Date.parse(updatedAt!.replace(/(\d\d)(\d\d)$/, '$1:$2'))];
      });
      const req = request({ ...change, format: 'columns', batchRows: 4 });
      const plan = await planDownload(conn, req);
      const whole = await columns(await streamDownload(conn, req, { plan }));
      expect(whole.rows, JSON.stringify(change)).toEqual(csv);
      expect(Math.max(...whole.sizes)).toBeLessThanOrEqual(4);
      const parts = await columns(
        await streamDownload(conn, { ...req, queryId: randomUUID() }, { plan, chunks: { rowsOf: () => 1, sizes: { firstRows: 1, maxRows: 2 } } }),
      );
      expect(parts.rows).toEqual(csv);
    }
  });

  it('split into parts, pages of 10 through 25 rows give every row once, in order', async () => {
    const all = dataLines((await page({ metricNames: PAGED })).body);
    expect((await allPages(pageInParts, { metricNames: PAGED, maxRows: 10 })).lines).toEqual(all);
  });

  itOnServer(
    'queries running side by side, seen in system.processes',
    "split into parts, cancel() stops every part's query, the running and the next",
    async () => {
      const req = request({ metricNames: BIG, maxRows: 10_000_000 });
      // Parts of 50 of the 100 metrics, each far more than the socket buffers hold.
      const stream = await streamDownload(conn, req, { plan: { next: null }, chunks: { rowsOf: () => 1, sizes: { firstRows: 50, maxRows: 50 } } });
      stream.body.on('error', () => {});
      // Nothing is read: the first part blocks on its socket, the next one was started beside it.
      await waitFor('two parts on the server', async () => ((await running(req.queryId)) === 2 ? true : undefined), 10_000, 10);
      await stream.cancel();
      await waitFor('every part to leave system.processes', async () => ((await running(req.queryId)) === 0 ? true : undefined), 10_000);
    },
  );

  itOnServer(
    'queries running side by side, seen in system.processes',
    'split into many parts, one part runs ahead of the one streaming and never more: at most two queries, every row once and in order',
    async () => {
      // 3M rows in 5 parts of 20 metrics, 17 MB each: more than the sockets hold, so a part ahead
      // that is sorted stays on the server until it is read.
      const req = request({ metricNames: BIG, maxRows: 10_000_000, format: 'columns', batchRows: 65_536 });
      const stream = await streamDownload(conn, req, { plan: { next: null }, chunks: { rowsOf: () => 1, sizes: { firstRows: 20, maxRows: 20 } } });
      const seen: number[] = [];
      let reading = true;
      const watching = (async () => {
        while (reading) {
          seen.push(await running(req.queryId));
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      let rows = 0;
      let last = [-1, -Infinity];
      let ordered = true;
      for await (const batch of nativePointColumns(stream.body as AsyncIterable<Buffer>, stream.names)) {
        // After the first batch, the part ahead runs beside the one streaming (which waits on this reader).
        if (rows === 0) {
          await waitFor('the part ahead beside the one streaming', async () => ((await running(req.queryId)) === 2 ? true : undefined), 30_000, 10);
          await new Promise((resolve) => setTimeout(resolve, 300));
          expect(await running(req.queryId)).toBe(2); // and no third while this reader waits
        }
        for (let i = 0; i < batch.rows; i++) {
          const key = [batch.nameIndex[i]!, Number(batch.timestamps[i])];
          if (key[0]! < last[0]! || (key[0] === last[0] && key[1]! <= last[1]!)) ordered = false;
          last = key;
        }
        rows += batch.rows;
      }
      reading = false;
      await watching;
      expect(rows).toBe(3_000_000);
      expect(ordered).toBe(true);
      expect(Math.max(...seen)).toBeLessThanOrEqual(2); // the one streaming and the one ahead: never a third
      await waitFor('every part to leave system.processes', async () => ((await running(req.queryId)) === 0 ? true : undefined), 10_000);
    },
  );

  itOnServer('a streamed answer (it buffers answers whole) seen in system.processes', 'cancel() stops a streaming query on the server', async () => {
    const req = request({ metricNames: BIG, maxRows: 10_000_000 });
    const stream = await streamDownload(conn, req, { plan: { next: null } });
    stream.body.on('error', () => {}); // as the api's pipeline would
    // The body is not read: ClickHouse blocks on its socket, the query stays in the process list.
    expect(await running(req.queryId)).toBe(1);
    await stream.cancel();
    await waitFor('the query to leave system.processes', async () => ((await running(req.queryId)) === 0 ? true : undefined), 10_000);
    await stream.cancel(); // twice is harmless
  });

  itOnServer(
    'a running query seen in system.processes from another connection',
    'an aborted signal stops the query while ClickHouse is still sorting, before any byte',
    async () => {
      const req = request({ metricNames: BIG, maxRows: 10_000_000 });
      const controller = new AbortController();
      const pending = streamDownload(conn, req, { plan: { next: null }, signal: controller.signal });
      pending.catch(() => {});
      await waitFor('the query to run', async () => ((await running(req.queryId)) === 1 ? true : undefined), 10_000, 10);
      controller.abort(new Error('client went away'));
      await expect(pending).rejects.toThrow('client went away');
      await waitFor('the query to leave system.processes', async () => ((await running(req.queryId)) === 0 ? true : undefined), 10_000);
    },
  );

  itOnServer('KILL QUERY of a query running beside it', 'cancelQueries stops every query of a download; an aborted plan rejects', async () => {
    const req = request({ metricNames: BIG, maxRows: 10_000_000 });
    const pending = streamDownload(conn, req, { plan: { next: null } });
    pending.catch(() => {});
    await waitFor('the query to run', async () => ((await running(req.queryId)) === 1 ? true : undefined), 10_000, 10);
    await cancelQueries(conn, req.queryId);
    await expect(pending).rejects.toThrow(/ClickHouse answered|socket hang up|cancelled/);
    expect(await running(req.queryId)).toBe(0);
    const controller = new AbortController();
    controller.abort(new Error('client went away'));
    await expect(planDownload(conn, request({ metricNames: BIG, maxRows: 10 }), { signal: controller.signal })).rejects.toThrow('client went away');
  });

  it('rejects with an Error when ClickHouse answers an error', async () => {
    const missing = { ...conn, database: `${conn.database}_missing` };
    await expect(planDownload(missing, request())).rejects.toThrow(/ClickHouse answered/);
    await expect(streamDownload(missing, request())).rejects.toThrow(/ClickHouse answered/);
    await expect(streamDownload({ ...conn, password: 'wrong' }, request())).rejects.toThrow(/ClickHouse answered/);
  });
});

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Bytes taken by the first gzip member: 10-byte header (no optional fields), deflate data, 8-byte trailer. */
function firstGzipMemberLength(gz: Buffer): number {
  expect(gz[3]).toBe(0); // FLG: no optional header fields
  const { engine } = inflateRawSync(gz.subarray(10), { info: true }) as unknown as { engine: { bytesWritten: number } };
  return 10 + engine.bytesWritten + 8;
}

/** CSV data lines, header and final line end dropped. */
function dataLines(body: Buffer): string[] {
  const lines = body.toString('utf8').split('\n');
  expect(lines[0]).toBe(HEADER.trimEnd());
  expect(lines.at(-1)).toBe('');
  return lines.slice(1, -1);
}

/** RowBinary for the points table: strings as a varint length and bytes, numbers little-endian. */
function rowBinary(points: readonly Point[]): Buffer {
  const parts: Buffer[] = [];
  const str = (s: string) => {
    const bytes = Buffer.from(s, 'utf8');
    const len: number[] = [];
    let n = bytes.length;
    do {
      len.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
      n >>>= 7;
    } while (n > 0);
    parts.push(Buffer.from(len), bytes);
  };
  for (const p of points) {
    str(p.name);
    const nums = Buffer.alloc(8 + 8 + 8 + 2 + 8 + 4);
    nums.writeBigInt64LE(BigInt(p.ts), 0);
    nums.writeDoubleLE(p.value, 8);
    nums.writeBigInt64LE(BigInt(p.updated_at), 16);
    parts.push(nums.subarray(0, 24));
    str('task');
    nums.writeUInt16LE(p.p, 24);
    nums.writeBigUInt64LE(BigInt(p.o), 26);
    nums.writeUInt32LE(p.r, 34);
    parts.push(nums.subarray(24));
  }
  return Buffer.concat(parts);
}
