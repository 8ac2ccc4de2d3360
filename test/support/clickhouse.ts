import type { Settings } from '@meridian/config';

/** Runs one statement on the run's ClickHouse database over HTTP (test-made SQL only, never user strings); the answer's text. */
export async function clickhouse(settings: Settings, sql: string): Promise<string> {
  const url = new URL(settings.CLICKHOUSE_URL);
  url.searchParams.set('database', settings.CLICKHOUSE_DATABASE);
  const res = await fetch(url, {
    method: 'POST',
    body: sql,
    headers: { 'X-ClickHouse-User': settings.CLICKHOUSE_USER, 'X-ClickHouse-Key': settings.CLICKHOUSE_PASSWORD },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse ${res.status}: ${text.slice(0, 500)}`);
  return text;
}

/** Rows of one metric in the run's points table (counted per metric: no name goes into the SQL). */
export async function pointsOfMetric(settings: Settings, metric: string): Promise<number> {
  const lines = (await clickhouse(settings, 'SELECT metric_name, count() FROM points GROUP BY metric_name FORMAT TabSeparated')).trim().split('\n');
  return Number(lines.map((l) => l.split('\t')).find(([name]) => name === metric)?.[1] ?? 0);
}
