import { CSV_HEADER, csvLineSql, jsonObjectSql } from './row-sql.ts';
import { int } from './filter-sql.ts';
import { COLUMNAR_SELECT } from './native.ts';
import type { DownloadFormat } from './types.ts';

/**
 * The download's SQL, built from trusted pieces only: `where` comes from filterSql (strings
 * in external tables, numbers checked), everything else is constant text.
 */

/** The sort key after metric_name and ts: with them, unique per row. */
const TIE_BREAK = ['updated_at', 'kafka_partition', 'kafka_offset', 'row_in_batch'];

/**
 * The metric's position in the name-sorted external table `names`, sorted on in place of
 * metric_name: 18.16 sorts everything it reads, and a UInt32 compares much faster than a
 * string (10M rows: about 7.3 s instead of 9.8 s). ClickHouse sorts the names itself, so the
 * order is exactly its string order (UTF-8 bytes), the one the cursor conditions compare with.
 * The '' in front is there because transform refuses empty arrays; no metric is named ''.
 */
// Sorted by arraySort, not by an ORDER BY under groupArray: an aggregate's order of rows is not
// guaranteed, and a row's name index into the page's names must be exactly this order.
const SORTED_NAMES = "arrayPushFront((SELECT arraySort(groupUniqArray(name)) FROM names), '')";
const RANK = `transform(metric_name, ${SORTED_NAMES}, arrayEnumerate(${SORTED_NAMES}), toUInt32(0))`;
/** Ranks of the rows that carry the constant text before and after the data rows. */
const FIRST = 0;
const LAST = 0xffff_ffff;

/**
 * Sort order after the rank. With latestOnly the newest row of each (metric_name, ts) comes
 * first so that LIMIT 1 BY keeps it; each (metric_name, ts) then has one row, so the output
 * is still in ascending key order.
 */
function orderBy(latestOnly: boolean, leading: readonly string[]): string {
  const tail = latestOnly ? TIE_BREAK.map((c) => `${c} DESC`) : TIE_BREAK;
  return [...leading, 'ts', ...tail].join(', ');
}

/** A row that sorts before or after the data rows, carrying constant text. */
function sentinel(rank: number, text: string): string {
  return (
    `SELECT toUInt32(${rank}) AS rank, toInt64(0) AS ts, toInt64(0) AS updated_at, ` +
    `toUInt16(0) AS kafka_partition, toUInt64(0) AS kafka_offset, toUInt32(0) AS row_in_batch, '${text}' AS line`
  );
}

/**
 * Which constant text a query writes: a whole body has both; a download split into groups
 * of metrics (chunks.ts) writes the header or `[` with its first group and `]` with its last.
 */
export type Frame = {
  readonly head: boolean;
  readonly tail: boolean;
  /** Format 'columns': the position of the query's first name among the page's names (its group's, when split). */
  readonly nameOffset?: number;
};
const WHOLE: Frame = { head: true, tail: true };

/**
 * The response body, header or brackets included, as one ClickHouse query: with gzip the
 * body must be one gzip member (curl and browsers stop after the first one), so Node
 * cannot add bytes of its own. Lines are built before the sort, where ClickHouse runs them
 * on every core; the sort then moves finished lines. `where` must read the external table
 * `names` (filterSql's does). `limit` caps the data rows when no planned end bounds them.
 */
export function streamSql(format: DownloadFormat, latestOnly: boolean, where: string, limit: number | null, frame: Frame = WHOLE): string {
  if (format === 'columns') return columnsSql(latestOnly, where, limit, frame.nameOffset ?? 0);
  const line = format === 'csv' ? csvLineSql() : jsonObjectSql();
  const dedupe = latestOnly ? ' LIMIT 1 BY rank, ts' : '';
  const all = `SELECT ${RANK} AS rank, ts, ${TIE_BREAK.join(', ')}, ${line} AS line FROM points WHERE ${where}`;
  const data = limit === null ? all : `SELECT * FROM (${all} ORDER BY ${orderBy(latestOnly, ['rank'])}${dedupe} LIMIT ${int(limit)})`;
  const head = frame.head ? `${sentinel(FIRST, format === 'csv' ? CSV_HEADER : '[')} UNION ALL ` : '';
  const tail = frame.tail && format === 'json' ? ` UNION ALL ${sentinel(LAST, ']')}` : '';
  const rows = `${head}${data}${tail}`;
  const sorted = `SELECT rank, line FROM (${rows}) ORDER BY ${orderBy(latestOnly, ['rank'])}${dedupe}`;
  // JSON: a comma before every object but the first. rowNumberInAllBlocks() counts rows in
  // the single sorted stream; with a head, row 0 is the '[' row and the first object row 1.
  const firstObject = frame.head ? 1 : 0;
  const out = format === 'csv' ? 'line' : `concat(if(rowNumberInAllBlocks() > ${firstObject} AND rank != ${LAST}, ',', ''), line)`;
  return `SELECT ${out} FROM (${sorted}) FORMAT TabSeparatedRaw`;
}

/**
 * The page's rows as typed columns (native.ts's COLUMNAR_SELECT) in ClickHouse's Native
 * format: the api encodes them (Arrow, Parquet), so there is no text and no frame to write.
 * The name is not read past the filter: a row carries its rank, and name_index is its
 * position among the page's names (rank 2 is the first name of `names`, after the '';
 * `nameOffset` places a group's names among the page's). Sorting and sending 4 bytes a row
 * in place of the string cost ClickHouse less (10M rows: 851 MB of memory instead of 1,171).
 */
function columnsSql(latestOnly: boolean, where: string, limit: number | null, nameOffset: number): string {
  const dedupe = latestOnly ? ' LIMIT 1 BY rank, ts' : '';
  const all = `SELECT ${RANK} AS rank, ts, value, ${TIE_BREAK.join(', ')} FROM points WHERE ${where}`;
  const data = limit === null ? all : `SELECT * FROM (${all} ORDER BY ${orderBy(latestOnly, ['rank'])}${dedupe} LIMIT ${int(limit)})`;
  const index = `toInt32(rank + ${int(nameOffset)} - 2) AS name_index`;
  const columns = [index, ...COLUMNAR_SELECT.slice(1).map(([name]) => name)].join(', ');
  return `SELECT ${columns} FROM (${data}) ORDER BY ${orderBy(latestOnly, ['rank'])}${dedupe} FORMAT Native`;
}

/** Rows (or, with latestOnly, distinct (metric_name, ts)) matching `where`, per metric in key order. */
export function countPerMetricSql(latestOnly: boolean, where: string): string {
  const n = latestOnly ? 'uniqExact(ts)' : 'count()';
  return `SELECT metric_name, ${n} AS n FROM points WHERE ${where} GROUP BY metric_name ORDER BY metric_name FORMAT JSONEachRow`;
}

/** All rows matching `where`: with latestOnly an upper bound of what the page would hold. */
export function countSql(where: string): string {
  return `SELECT count() FROM points WHERE ${where} FORMAT TabSeparated`;
}

/** One row, or none, matching `where`: whether any row is left, without counting them. */
export function anyRowSql(where: string): string {
  return `SELECT 1 FROM points WHERE ${where} LIMIT 1 FORMAT TabSeparated`;
}

/**
 * The key of the `position`-th (1-based) row of the one metric in the external table
 * `only_name`: the page's last row, found inside a single metric so the sort stays small.
 */
export function boundaryInMetricSql(latestOnly: boolean, where: string, position: number): string {
  if (position < 1) throw new RangeError(`position must be at least 1: ${position}`);
  return (
    `SELECT ts, ${TIE_BREAK.join(', ')} FROM points WHERE ${where} AND metric_name = (SELECT any(name) FROM only_name) ` +
    `ORDER BY ${orderBy(latestOnly, [])}${latestOnly ? ' LIMIT 1 BY ts' : ''} LIMIT ${int(position - 1)}, 1 FORMAT JSONEachRow`
  );
}
