/**
 * bench-history's table and goals, apart from the measuring: pure, so a unit test holds them.
 * A figure is a number, or the reason there is none ("died: heap", "> 120 s", "3 not 200"):
 * a process that does not come up is a result of the bench, not a failure of it.
 */
export type Figure = number | string;
/** Nothing to measure: no tasks to look up, no process to read. */
export const NOT_MEASURED = '—';

export const COLUMNS = ['api_ready_ms', 'api_rss_mb', 'task_p99_ms', 'tasks_p99_ms', 'files_p99_ms', 'ingest_ready_ms', 'ingest_rss_mb'] as const;
export type Column = (typeof COLUMNS)[number];
/**
 * Events each new process read at start before it served (per folded log: the tail after its
 * snapshot or the read model's positions), as `fold count` pairs; shown beside the figures, no goal.
 */
export type ReadAtStart = Readonly<Record<string, number>>;
export type HistoryRow = {
  readonly tasks: number;
  readonly figures: Readonly<Record<Column, Figure>>;
  readonly readAtStart?: { readonly api?: ReadAtStart; readonly ingest?: ReadAtStart };
};

type Kind = 'ready' | 'rss' | 'lookup';
const SHAPE: Record<Column, { header: string; kind: Kind }> = {
  api_ready_ms: { header: 'api ready', kind: 'ready' },
  api_rss_mb: { header: 'api RSS', kind: 'rss' },
  task_p99_ms: { header: 'GET /tasks/{id} p99', kind: 'lookup' },
  tasks_p99_ms: { header: 'GET /tasks p99', kind: 'lookup' },
  files_p99_ms: { header: 'GET /files p99', kind: 'lookup' },
  ingest_ready_ms: { header: 'ingest ready', kind: 'ready' },
  ingest_rss_mb: { header: 'ingest RSS', kind: 'rss' },
};

/** The goals for the largest history, and how far it may drift from the next smaller one. */
export const GOALS = { readyMs: 2000, rssMb: 200, lookupP99Ms: 20, growth: 0.2 } as const;
const LIMIT: Record<Kind, number> = { ready: GOALS.readyMs, rss: GOALS.rssMb, lookup: GOALS.lookupP99Ms };

function show(kind: Kind, f: Figure): string {
  if (typeof f === 'string') return f;
  if (kind === 'ready') return `${(f / 1000).toFixed(2)} s`;
  if (kind === 'rss') return `${Math.round(f)} MB`;
  return `${f.toFixed(1)} ms`;
}

const showRead = (read: ReadAtStart | undefined): string =>
  read === undefined || Object.keys(read).length === 0
    ? NOT_MEASURED
    : Object.entries(read)
        .map(([fold, n]) => `${fold} ${n.toLocaleString('en')}`)
        .join(', ');

export function historyTable(rows: readonly HistoryRow[]): string[] {
  const headers = ['tasks', ...COLUMNS.map((c) => SHAPE[c].header), 'api read at start', 'ingest read at start'];
  const cells = rows.map((r) => [
    r.tasks.toLocaleString('en'),
    ...COLUMNS.map((c) => show(SHAPE[c].kind, r.figures[c])),
    showRead(r.readAtStart?.api),
    showRead(r.readAtStart?.ingest),
  ]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((v, i) => v.padStart(widths[i]!)).join('  ');
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)];
}

export type GoalResult = { readonly goal: string; readonly verdict: 'PASS' | 'MISS'; readonly detail: string };

/**
 * The goals over the largest history (last of `rows` by size): each figure under its limit, and
 * each at most GOALS.growth above the same figure at the next smaller size (less is no miss).
 */
export function historyGoals(rows: readonly HistoryRow[]): GoalResult[] {
  const sorted = [...rows].sort((a, b) => a.tasks - b.tasks);
  const largest = sorted.at(-1);
  if (!largest) return [];
  const previous = sorted.length > 1 ? sorted.at(-2)! : null;
  const at = (r: HistoryRow) => r.tasks.toLocaleString('en');
  const results: GoalResult[] = [];
  for (const c of COLUMNS) {
    const { header, kind } = SHAPE[c];
    const f = largest.figures[c];
    const limit = LIMIT[kind];
    results.push({
      goal: `${header} at ${at(largest)} ≤ ${show(kind, limit)}`,
      verdict: typeof f === 'number' && f <= limit ? 'PASS' : 'MISS',
      detail: show(kind, f),
    });
  }
  if (!previous) return results;
  for (const c of COLUMNS) {
    const { header, kind } = SHAPE[c];
    const f = largest.figures[c];
    const p = previous.figures[c];
    const goal = `${header} at ${at(largest)} within ${GOALS.growth * 100}% of ${at(previous)}`;
    // No tasks to look up at the smaller size: nothing to compare with, rather than a miss.
    if (p === NOT_MEASURED && f !== NOT_MEASURED) continue;
    if (typeof f !== 'number' || typeof p !== 'number') {
      results.push({ goal, verdict: 'MISS', detail: `${show(kind, f)} against ${show(kind, p)}` });
      continue;
    }
    const ratio = p > 0 ? f / p : f > 0 ? Infinity : 1;
    results.push({ goal, verdict: ratio <= 1 + GOALS.growth ? 'PASS' : 'MISS', detail: `${show(kind, f)} against ${show(kind, p)}: ×${ratio.toFixed(2)}` });
  }
  return results;
}
