import type { ExternalTable } from './external-data.ts';
import type { DownloadCursor } from './types.ts';

/**
 * The WHERE clause shared by every download query, with the external tables it reads.
 * Strings come only from external tables; numbers are inlined after a safe-integer check.
 * Conditions are written so the primary key (metric_name, ts, updated_at) can skip granules.
 */

export type FilterInput = {
  readonly metricNames: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
  /** With latestOnly a row stands for its whole (metric_name, ts), so bounds compare only those two. */
  readonly latestOnly: boolean;
  /** Keep rows strictly after this key. */
  readonly after: DownloadCursor | null;
  /** Keep rows up to and including this key. */
  readonly until: DownloadCursor | null;
};

export type Filter = { readonly where: string; readonly tables: readonly ExternalTable[] };

/** A number for SQL text; anything but a safe integer is a bug upstream. */
export function int(n: number): string {
  if (!Number.isSafeInteger(n)) throw new TypeError(`not a safe integer: ${n}`);
  return String(n);
}

const nameTable = (name: string, value: string): ExternalTable => ({ name, structure: 'name String', rows: [[value]] });
const scalarName = (table: string) => `(SELECT any(name) FROM ${table})`;
const TIE_BREAK = '(ts, updated_at, kafka_partition, kafka_offset, row_in_batch)';
const tieBreakOf = (c: DownloadCursor) => `(${int(c.ts)}, ${int(c.updated_at)}, ${int(c.partition)}, ${int(c.offset)}, ${int(c.row)})`;

export function filterSql(f: FilterInput): Filter {
  const tables: ExternalTable[] = [{ name: 'names', structure: 'name String', rows: f.metricNames.map((n) => [n]) }];
  const conditions = ['metric_name IN (SELECT name FROM names)', `ts >= ${int(f.fromMs)}`, `ts <= ${int(f.toMs)}`];
  if (f.after) {
    tables.push(nameTable('after_name', f.after.metric_name));
    const a = scalarName('after_name');
    const sameName = f.latestOnly ? `ts > ${int(f.after.ts)}` : `ts >= ${int(f.after.ts)} AND ${TIE_BREAK} > ${tieBreakOf(f.after)}`;
    conditions.push(`(metric_name > ${a} OR (metric_name = ${a} AND ${sameName}))`);
  }
  if (f.until) {
    tables.push(nameTable('until_name', f.until.metric_name));
    const u = scalarName('until_name');
    const sameName = f.latestOnly ? `ts <= ${int(f.until.ts)}` : `ts <= ${int(f.until.ts)} AND ${TIE_BREAK} <= ${tieBreakOf(f.until)}`;
    conditions.push(`(metric_name < ${u} OR (metric_name = ${u} AND ${sameName}))`);
  }
  return { where: conditions.join(' AND '), tables };
}
