/**
 * A download split into consecutive groups of metrics, each its own query. 18.16 sorts every
 * row a query reads before it writes the first one, so one query over 10M rows answers after
 * seconds; a small first group answers after milliseconds, and the groups after it grow so
 * the cost of one more query stays small beside the rows it carries.
 */

export type ChunkSizes = {
  /** Estimated rows of the first group. */
  readonly firstRows: number;
  /** Estimated rows a group grows to (each group at most 4 times the one before). */
  readonly maxRows: number;
};

/** ClickHouse's String order: bytewise on UTF-8 (JavaScript's < compares UTF-16 code units). */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * Splits names into consecutive groups in ClickHouse's order. `rowsOf` estimates a metric's
 * rows (rowsInWindow): it sizes the groups only, never decides which rows are read. A metric
 * bigger than the group's size makes a group on its own: a group never splits a metric.
 */
export function chunkNames(names: readonly string[], rowsOf: (name: string) => number, sizes: ChunkSizes): string[][] {
  const sorted = [...new Set(names)].sort(byteOrder);
  const groups: string[][] = [];
  let target = Math.max(1, sizes.firstRows);
  let group: string[] = [];
  let rows = 0;
  for (const name of sorted) {
    group.push(name);
    rows += Math.max(0, rowsOf(name));
    if (rows >= target) {
      groups.push(group);
      group = [];
      rows = 0;
      target = Math.min(target * 4, Math.max(sizes.maxRows, sizes.firstRows));
    }
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/**
 * A metric's rows inside [fromMs, toMs], estimated from its catalog entry as if its points
 * were spread evenly between its first and last timestamp: parts of a narrow window are
 * then sized by what the window holds, not by the whole metric.
 */
export function rowsInWindow(entry: { readonly points: number; readonly first_ts: number; readonly last_ts: number }, fromMs: number, toMs: number): number {
  const from = Math.max(fromMs, entry.first_ts);
  const to = Math.min(toMs, entry.last_ts);
  if (to < from) return 0;
  const span = entry.last_ts - entry.first_ts;
  return span <= 0 ? entry.points : Math.ceil((entry.points * (to - from + 1)) / (span + 1));
}
