import { describe, expect, it } from 'vitest';
import { historyGoals, historyTable, NOT_MEASURED, type HistoryRow } from '../bench/history-report.ts';

const row = (tasks: number, over: Partial<HistoryRow['figures']> = {}): HistoryRow => ({
  tasks,
  figures: { api_ready_ms: 1500, api_rss_mb: 150, task_p99_ms: 5, tasks_p99_ms: 6, files_p99_ms: 7, ingest_ready_ms: 1200, ingest_rss_mb: 120, ...over },
});

const verdict = (rows: HistoryRow[], goal: string) => historyGoals(rows).find((g) => g.goal === goal)?.verdict;

describe('bench-history report', () => {
  it('prints one aligned row per size, with units, and a reason in place of a missing figure', () => {
    const lines = historyTable([
      { ...row(0, { task_p99_ms: NOT_MEASURED }), readAtStart: { api: { accounts: 0, tasks: 1234 }, ingest: {} } },
      row(1_000_000, { api_ready_ms: 'died: heap', api_rss_mb: NOT_MEASURED }),
    ]);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(
      /^\s+tasks\s+api ready\s+api RSS\s+GET \/tasks\/\{id\} p99\s+GET \/tasks p99\s+GET \/files p99\s+ingest ready\s+ingest RSS\s+api read at start\s+ingest read at start$/,
    );
    expect(lines[2]).toMatch(/^\s+0\s+1\.50 s\s+150 MB\s+—\s+6\.0 ms\s+7\.0 ms\s+1\.20 s\s+120 MB\s+accounts 0, tasks 1,234\s+—$/);
    expect(lines[3]).toMatch(/^1,000,000\s+died: heap\s+—\s+5\.0 ms/);
    expect(new Set(lines.map((l) => l.length)).size).toBe(1);
  });

  it('holds the largest size to the limits', () => {
    const rows = [row(100_000), row(1_000_000, { api_ready_ms: 2001, ingest_rss_mb: 200, files_p99_ms: 20.5 })];
    expect(verdict(rows, 'api ready at 1,000,000 ≤ 2.00 s')).toBe('MISS');
    expect(verdict(rows, 'ingest RSS at 1,000,000 ≤ 200 MB')).toBe('PASS');
    expect(verdict(rows, 'GET /files p99 at 1,000,000 ≤ 20.0 ms')).toBe('MISS');
    expect(verdict(rows, 'GET /tasks/{id} p99 at 1,000,000 ≤ 20.0 ms')).toBe('PASS');
  });

  it('compares the largest size with the next smaller one: at most 20% more, less is no miss', () => {
    const rows = [row(0), row(1_000_000, { api_rss_mb: 181, tasks_p99_ms: 3 }), row(100_000)];
    const goals = historyGoals(rows);
    expect(goals).toHaveLength(14);
    expect(verdict(rows, 'api RSS at 1,000,000 within 20% of 100,000')).toBe('MISS');
    expect(verdict(rows, 'GET /tasks p99 at 1,000,000 within 20% of 100,000')).toBe('PASS');
    expect(verdict(rows, 'api ready at 1,000,000 within 20% of 100,000')).toBe('PASS');
    expect(goals.find((g) => g.goal.startsWith('api RSS at 1,000,000 within'))?.detail).toBe('181 MB against 150 MB: ×1.21');
  });

  it('counts a process that died or was not ready as a miss, and skips a comparison with nothing measured before', () => {
    const rows = [row(0, { task_p99_ms: NOT_MEASURED }), row(100_000, { ingest_ready_ms: '> 120 s', ingest_rss_mb: NOT_MEASURED })];
    expect(verdict(rows, 'ingest ready at 100,000 ≤ 2.00 s')).toBe('MISS');
    expect(verdict(rows, 'ingest ready at 100,000 within 20% of 0')).toBe('MISS');
    expect(verdict(rows, 'ingest RSS at 100,000 ≤ 200 MB')).toBe('MISS');
    expect(verdict(rows, 'GET /tasks/{id} p99 at 100,000 within 20% of 0')).toBeUndefined();
    expect(historyGoals([row(5)])).toHaveLength(7);
    expect(historyGoals([])).toEqual([]);
  });
});
