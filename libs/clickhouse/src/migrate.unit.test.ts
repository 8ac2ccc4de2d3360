import { describe, expect, it } from 'vitest';
import { readMigrations, statementsFor } from './migrate.ts';

const catalogView = () => readMigrations().flatMap((m) => m.statements).find((s) => s.startsWith('CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog'))!;

describe('migration statements per kind of database', () => {
  it('an Ordinary database (18.16) gets every statement as written, the catalog view with its inner table', () => {
    for (const s of readMigrations().flatMap((m) => m.statements)) expect(statementsFor(s, { atomicDatabase: false })).toEqual([s]);
  });

  it('an Atomic database gets the catalog as an explicit table of the same name and a view writing TO it', () => {
    const [table, view, ...rest] = statementsFor(catalogView(), { atomicDatabase: true });
    expect(rest).toEqual([]);
    expect(table).toMatch(/^CREATE TABLE IF NOT EXISTS metric_catalog ENGINE = AggregatingMergeTree\(\)\s+ORDER BY metric_name AS SELECT[\s\S]*FROM points\s+WHERE 0 GROUP BY metric_name$/);
    expect(view).toMatch(/^CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog_feed TO metric_catalog AS SELECT[\s\S]*countState\(\) AS points[\s\S]*FROM points\s+GROUP BY metric_name$/);
  });

  it('other statements are the same on an Atomic database', () => {
    const points = readMigrations()[0]!.statements[0]!;
    expect(statementsFor(points, { atomicDatabase: true })).toEqual([points]);
  });
});
