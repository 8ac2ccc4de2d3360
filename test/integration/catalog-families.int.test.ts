import { describe, expect, it } from 'vitest';
import { clickhouseMetricCatalog, type NameMatch } from '@meridian/clickhouse';
import { scratchDatabase } from '../support/scratch-database.ts';

/** What the api's resolveMetricNames tests for each substring pattern. */
const TESTS: Record<NameMatch, (name: string, text: string) => boolean> = {
  contains: (name, text) => name.includes(text),
  starts_with: (name, text) => name.startsWith(text),
  ends_with: (name, text) => name.endsWith(text),
};

/**
 * The catalog read of a PromQL query whose selectors all name their metric: the entries of
 * those metrics' series only, a superset of what the selectors can match (a name that is not a
 * well-formed series name is its own __name__), never a series of another metric.
 */
describe("the catalog's entries of some metrics", () => {
  const names = [
    'up',
    'up{job="a"}',
    'up{job="b"}',
    'upper{job="a"}',
    'up_total{job="a"}',
    'a{b',
    'apple',
    "x'); DROP TABLE points; --",
    'température{site="Orléans"}',
    '50%_done',
  ];
  const { conn, client } = scratchDatabase(async (c) => {
    const rows = names.flatMap((metric_name, i) =>
      [1000, 2000, 3000].slice(0, 1 + (i % 3)).map((ts, j) => ({
        metric_name,
        ts,
        value: j,
        updated_at: 1,
        task_id: 't',
        kafka_partition: 0,
        kafka_offset: i,
        row_in_batch: j,
      })),
    );
    await c.insert({ table: 'points', values: rows, format: 'JSONEachRow' });
  });
  const catalog = clickhouseMetricCatalog(conn);
  const namesOf = async (metrics: string[]) => (await catalog.families(metrics)).map((e) => e.metric_name).sort();

  it('answers a metric without labels and its labelled series, not the metrics its name begins', async () => {
    expect(await namesOf(['up'])).toEqual(['up', 'up{job="a"}', 'up{job="b"}']);
    expect(await namesOf(['upper', 'apple'])).toEqual(['apple', 'upper{job="a"}']);
  });

  it('answers a name that is not a series name by itself, and with the metric before its brace (a superset)', async () => {
    expect(await namesOf(['a{b'])).toEqual(['a{b']);
    expect(await namesOf(['a'])).toEqual(['a{b']);
  });

  it('keeps the extent of each entry, as the whole catalog does', async () => {
    const whole = new Map((await catalog.list()).map((e) => [e.metric_name, e]));
    const some = await catalog.families(['up', 'up_total']);
    expect(some.length).toBe(4);
    for (const e of some) expect(e).toEqual(whole.get(e.metric_name));
  });

  it('takes the names as data: one that reads as SQL is only a name', async () => {
    expect(await namesOf(["x'); DROP TABLE points; --"])).toEqual(["x'); DROP TABLE points; --"]);
    expect(await namesOf(['nothing', "x'"])).toEqual([]);
    expect((await catalog.list()).length).toBe(names.length);
    await expect(client.query({ query: 'SELECT count() FROM points' })).resolves.toBeDefined();
  });
});

describe("the catalog's entries matching a download's pattern", () => {
  const names = ['up', 'up{job="a"}', 'upper', 'température{site="Orléans"}', '50%_done', "x'); DROP TABLE points; --", 'a\\b', 'tab\there\nand\u0000nul'];
  const { conn } = scratchDatabase(async (c) => {
    const rows = names.map((metric_name, i) => ({
      metric_name,
      ts: 1000 * (i + 1),
      value: i,
      updated_at: 1,
      task_id: 't',
      kafka_partition: 0,
      kafka_offset: i,
      row_in_batch: 0,
    }));
    await c.insert({ table: 'points', values: rows, format: 'JSONEachRow' });
  });
  const catalog = clickhouseMetricCatalog(conn);

  it('reads the names the api would pick from the whole catalog, and no other, with their extents', async () => {
    const whole = await catalog.list();
    const texts = [
      'up',
      'u',
      '{job="a"}',
      'é',
      'Orléans"}',
      '%',
      '_',
      '%_',
      "'",
      '\\',
      'points; --',
      'nothing',
      'upper{',
      '\t',
      '\n',
      '\u0000',
      'e\nand\u0000n',
    ];
    for (const match of Object.keys(TESTS) as NameMatch[]) {
      for (const text of texts) {
        const expected = whole.filter((e) => TESTS[match](e.metric_name, text)).sort((a, b) => a.metric_name.localeCompare(b.metric_name));
        const read = (await catalog.matching(match, text)).sort((a, b) => a.metric_name.localeCompare(b.metric_name));
        expect(read, `${match} ${text}`).toEqual(expected);
      }
    }
  });
});
