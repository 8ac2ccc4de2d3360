import { createPointsSink, type ClickHouseClient } from '@meridian/clickhouse';
import { q } from './generations.ts';

/**
 * Verification of a rebuilt table against another (the live one): per metric, the row count
 * and an order-independent checksum (the sum, modulo 2^64, of cityHash64 over every column of
 * the row) of the rows both tables cover, i.e. per partition the batches up to the lower of
 * the two tables' positions. Every column is compared, kafka_partition/kafka_offset/row_in_batch
 * included: a rebuild from the same log must reproduce them exactly, as the live projector's
 * resume and the download cursor depend on them.
 *
 * A position counts staged seals too: a staged share's rows carry the offsets of its
 * batches, below its seal, and are in a table only from the seal on. So the rows of a share
 * sealed after the compared position (in either table) are left out of the comparison: the other
 * table holds them only once it is past that seal too.
 */
export const ROW_HASH = 'cityHash64(metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch)';

export type MetricSum = { readonly rows: number; readonly checksum: string };
export type Mismatch = { readonly metric_name: string; readonly expected: MetricSum | null; readonly actual: MetricSum | null };

export type Verification = {
  readonly ok: boolean;
  /** Per partition, the last batch offset both tables were compared up to (-1: nothing). */
  readonly compared_up_to: Record<string, number>;
  readonly metrics: number;
  readonly rows_expected: number;
  readonly rows_actual: number;
  /** Rows outside the compared range (written after it by one of the two). */
  readonly rows_beyond_expected: number;
  readonly rows_beyond_actual: number;
  readonly mismatched_metrics: number;
  /** The first mismatches, by metric name. */
  readonly mismatches: readonly Mismatch[];
};

/** WHERE clause: rows of batches at or below `upTo` per partition (numbers only). */
export function rangeCondition(upTo: ReadonlyMap<number, number>): string {
  const parts: string[] = [];
  for (const [p, o] of [...upTo].sort((a, b) => a[0] - b[0])) {
    if (!Number.isSafeInteger(p) || p < 0 || p > 65535 || !Number.isSafeInteger(o)) throw new Error(`not a position: ${p}/${o}`);
    if (o >= 0) parts.push(`(kafka_partition = ${p} AND kafka_offset <= ${o})`);
  }
  return parts.length === 0 ? '0' : parts.join(' OR ');
}

export function perMetricSql(table: string, where: string): string {
  return `SELECT metric_name, toString(count()) AS rows, toString(sum(${ROW_HASH})) AS checksum FROM ${q(table)} WHERE ${where} GROUP BY metric_name`;
}

/** Compares per-metric sums (pure). */
export function compareSums(
  expected: ReadonlyMap<string, MetricSum>,
  actual: ReadonlyMap<string, MetricSum>,
  keep = 20,
): { mismatched: number; mismatches: Mismatch[] } {
  const names = [...new Set([...expected.keys(), ...actual.keys()])].sort();
  const mismatches: Mismatch[] = [];
  let mismatched = 0;
  for (const name of names) {
    const e = expected.get(name) ?? null;
    const a = actual.get(name) ?? null;
    if (e && a && e.rows === a.rows && e.checksum === a.checksum) continue;
    mismatched++;
    if (mismatches.length < keep) mismatches.push({ metric_name: name, expected: e, actual: a });
  }
  return { mismatched, mismatches };
}

async function sums(client: ClickHouseClient, table: string, where: string): Promise<Map<string, MetricSum>> {
  const found = await (
    await client.query({ query: perMetricSql(table, where), format: 'JSONEachRow' })
  ).json<{ metric_name: string; rows: string; checksum: string }>();
  return new Map(found.map((r) => [r.metric_name, { rows: Number(r.rows), checksum: r.checksum }]));
}

async function count(client: ClickHouseClient, table: string, where: string): Promise<number> {
  const found = await (
    await client.query({ query: `SELECT toString(count()) AS n FROM ${q(table)} WHERE ${where}`, format: 'JSONEachRow' })
  ).json<{ n: string }>();
  return Number(found[0]?.n ?? 0);
}

/** WHERE clause: not a row of a staged share sealed after `upTo` in its partition, by either seals table. */
export function sealedAfterCondition(upTo: ReadonlyMap<number, number>, seals: readonly string[]): string {
  if (seals.length === 0) return '1';
  const after = [...upTo].map(([p, o]) => {
    if (!Number.isSafeInteger(p) || !Number.isSafeInteger(o)) throw new Error(`not a position: ${p}/${o}`);
    return `(kafka_partition = ${p} AND seal_offset > ${o})`;
  });
  if (after.length === 0) return '1';
  return `(kafka_partition, task_id) NOT IN (${seals.map((t) => `SELECT kafka_partition, task_id FROM ${q(t)} WHERE ${after.join(' OR ')}`).join(' UNION ALL ')})`;
}

/** A points table and the table of its staged seals (absent: a table from before staged uploads). */
export type ComparedTable = { readonly points: string; readonly seals?: string };

/** Verifies `actual` (a rebuild) against `expected` (usually the live `points`) on the range both cover. */
export async function verifyTables(
  client: ClickHouseClient,
  expected: ComparedTable,
  actual: ComparedTable,
  partitions: readonly number[],
): Promise<Verification> {
  const existing = new Set(
    (
      await (await client.query({ query: 'SELECT name FROM system.tables WHERE database = currentDatabase()', format: 'JSONEachRow' })).json<{ name: string }>()
    ).map((t) => t.name),
  );
  const sealsOf = (t: ComparedTable) => (t.seals !== undefined && existing.has(t.seals) ? t.seals : undefined);
  const sinkOf = (t: ComparedTable) => {
    const seals = sealsOf(t);
    return createPointsSink(client, t.points, seals === undefined ? {} : { sealsTable: seals });
  };
  const [e, a] = await Promise.all([sinkOf(expected).maxOffsets(partitions), sinkOf(actual).maxOffsets(partitions)]);
  const upTo = new Map(partitions.map((p) => [p, Math.min(e.get(p) ?? -1, a.get(p) ?? -1)]));
  const seals = [sealsOf(expected), sealsOf(actual)].filter((t) => t !== undefined);
  const where = `(${rangeCondition(upTo)}) AND ${sealedAfterCondition(upTo, seals)}`;
  const [se, sa, all] = await Promise.all([
    sums(client, expected.points, where),
    sums(client, actual.points, where),
    Promise.all([count(client, expected.points, '1'), count(client, actual.points, '1')]),
  ]);
  const { mismatched, mismatches } = compareSums(se, sa);
  const rowsExpected = [...se.values()].reduce((n, s) => n + s.rows, 0);
  const rowsActual = [...sa.values()].reduce((n, s) => n + s.rows, 0);
  return {
    ok: mismatched === 0,
    compared_up_to: Object.fromEntries([...upTo].map(([p, o]) => [String(p), o])),
    metrics: new Set([...se.keys(), ...sa.keys()]).size,
    rows_expected: rowsExpected,
    rows_actual: rowsActual,
    rows_beyond_expected: all[0] - rowsExpected,
    rows_beyond_actual: all[1] - rowsActual,
    mismatched_metrics: mismatched,
    mismatches,
  };
}

/** Whole-table per-metric sums: two tables with equal sums hold the same rows (determinism checks). */
export async function tableChecksums(client: ClickHouseClient, table: string): Promise<Map<string, MetricSum>> {
  return sums(client, table, '1');
}

export function formatVerification(v: Verification): string {
  const lines = [
    `verification ${v.ok ? 'PASSED' : 'FAILED'}: ${v.metrics.toLocaleString('en')} metrics, ${v.rows_actual.toLocaleString('en')} rows rebuilt vs ${v.rows_expected.toLocaleString('en')} live in the compared range (batches up to ${
      Object.entries(v.compared_up_to)
        .map(([p, o]) => `${p}:${o}`)
        .join(',') || 'none'
    })`,
    `  outside the compared range: ${v.rows_beyond_actual.toLocaleString('en')} rebuilt, ${v.rows_beyond_expected.toLocaleString('en')} live`,
  ];
  if (v.mismatched_metrics > 0) {
    lines.push(`  ${v.mismatched_metrics} metrics differ${v.mismatched_metrics > v.mismatches.length ? ` (first ${v.mismatches.length})` : ''}:`);
    for (const m of v.mismatches) {
      const show = (s: MetricSum | null) => (s ? `${s.rows} rows #${s.checksum}` : 'absent');
      lines.push(`    ${JSON.stringify(m.metric_name)}: live ${show(m.expected)}, rebuilt ${show(m.actual)}`);
    }
  }
  return lines.join('\n');
}
