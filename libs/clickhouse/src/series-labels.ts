import { METRIC_NAME, seriesLabels } from '@meridian/domain';
import { queryText, type ConnOptions } from './download/http.ts';
import { unescape } from './series.ts';

/**
 * The series_labels table (migration 008): each catalog name's labels beside it, so a series is
 * chosen by its labels in ClickHouse. Names and label values travel as external data, never as
 * SQL text; the SQL holds only indexes into that data.
 */

/** A label matcher the store applies: the label's value (empty when the series lacks it) equal, or not, to `value`. */
export type LabelEquality = { readonly name: string; readonly equal: boolean; readonly value: string };

/** How many names one completion adds at most: the rest wait for the next read (each read adds more). */
export const MAX_NAMES_ADDED = 100_000;

/** The catalog names series_labels lacks, at most MAX_NAMES_ADDED. */
const MISSING_SQL =
  'SELECT DISTINCT metric_name FROM metric_catalog WHERE metric_name NOT IN (SELECT name FROM series_labels) ' + `LIMIT ${MAX_NAMES_ADDED} FORMAT TabSeparated`;

/**
 * A row per (name, label) in, one row per name out. The two groupArray of one group see its
 * rows in the same order, so names and values stay paired; arraySort orders them by name.
 */
const INSERT_SQL =
  'INSERT INTO series_labels (name, metric, label_names, label_values) ' +
  'SELECT name, any(metric), arrayMap(p -> p.1, arraySort(groupArray((label, value)))), arrayMap(p -> p.2, arraySort(groupArray((label, value)))) ' +
  'FROM pairs GROUP BY name';

/**
 * Adds the labels of the catalog's names that series_labels does not have yet (names new since
 * the last read; all of them on a new or replayed database). Returns how many it added.
 */
export async function completeSeriesLabels(conn: ConnOptions): Promise<number> {
  const missing = (await queryText(conn, { sql: MISSING_SQL }))
    .split('\n')
    .filter((l) => l.length > 0)
    .map(unescape);
  if (missing.length === 0) return 0;
  const rows = missing.flatMap((name) => {
    const labels = seriesLabels(name);
    const metric = labels.find(([n]) => n === METRIC_NAME)?.[1] ?? name;
    return labels.map(([label, value]) => [name, metric, label, value]);
  });
  await queryText(conn, { sql: INSERT_SQL, tables: [{ name: 'pairs', structure: 'name String, metric String, label String, value String', rows }] });
  return missing.length;
}

/** The value of label number i of the matchers' table in a series_labels row ('' when the series lacks the label). */
const labelValueSql = (i: number) => `label_values[indexOf(label_names, (SELECT name FROM matchers WHERE i = ${i}))]`;

/** The query: names of the catalog whose labels pass every matcher (the matchers' i = 0, 1, ...). */
export function seriesByLabelsSql(matchers: readonly LabelEquality[]): string {
  const conditions = matchers.map((m, i) => `${labelValueSql(i)} ${m.equal ? '=' : '!='} (SELECT value FROM matchers WHERE i = ${i})`);
  return `SELECT DISTINCT name FROM series_labels WHERE name IN (SELECT metric_name FROM metric_catalog)${conditions.map((c) => ` AND ${c}`).join('')} FORMAT TabSeparated`;
}

/**
 * The names of the catalog whose labels pass every matcher, after completing series_labels. The
 * caller applies entitlements: this sees every series.
 */
export async function seriesByLabels(conn: ConnOptions, matchers: readonly LabelEquality[]): Promise<string[]> {
  await completeSeriesLabels(conn);
  const text = await queryText(conn, {
    sql: seriesByLabelsSql(matchers),
    tables: [{ name: 'matchers', structure: 'i UInt32, name String, value String', rows: matchers.map((m, i) => [String(i), m.name, m.value]) }],
  });
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map(unescape);
}
