import { describe, expect, it } from 'vitest';
import { capabilities } from './capabilities.ts';
import { readMigrations, statementsFor } from './migrate.ts';

const all = () => readMigrations().flatMap((m) => m.statements);
const catalogView = () => all().find((s) => s.startsWith('CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog'))!;
const windowSettings = () => readMigrations().find((m) => m.name === 'deduplication_window')!.statements;
const ch18 = capabilities('18.16.1', 'Ordinary');
const ch26 = capabilities('26.9.2.1', 'Atomic');

describe('migration statements per server and kind of database', () => {
  it('18.16 (Ordinary) gets every statement as written, the catalog view with its inner table, and no deduplication window', () => {
    for (const s of all()) expect(statementsFor(s, ch18)).toEqual(windowSettings().includes(s) ? [] : [s]);
  });

  it('migration 004 gives points and its catalog a deduplication window of 1000 blocks, where the server takes it', () => {
    expect(windowSettings()).toEqual([
      'ALTER TABLE points MODIFY SETTING non_replicated_deduplication_window = 1000',
      'ALTER TABLE metric_catalog MODIFY SETTING non_replicated_deduplication_window = 1000',
    ]);
    for (const s of windowSettings()) {
      expect(statementsFor(s, ch26)).toEqual([s]);
      expect(statementsFor(s, capabilities('25.8.3.1', 'Atomic'))).toEqual([s]);
      // Before insert_deduplication_token (22.2), and on Ordinary databases (the catalog's inner table refuses MODIFY SETTING): none.
      expect(statementsFor(s, capabilities('22.1.1.1', 'Atomic'))).toEqual([]);
      expect(statementsFor(s, capabilities('26.9.2.1', 'Ordinary'))).toEqual([]);
    }
  });

  it('an Atomic database gets the catalog as an explicit table of the same name and a view writing TO it', () => {
    const [table, view, ...rest] = statementsFor(catalogView(), ch26);
    expect(rest).toEqual([]);
    expect(table).toMatch(/^CREATE TABLE IF NOT EXISTS metric_catalog ENGINE = AggregatingMergeTree\(\)\s+ORDER BY metric_name AS SELECT[\s\S]*FROM points\s+WHERE 0 GROUP BY metric_name$/);
    expect(view).toMatch(/^CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog_feed TO metric_catalog AS SELECT[\s\S]*countState\(\) AS points[\s\S]*FROM points\s+GROUP BY metric_name$/);
  });

  it('other statements are the same on an Atomic database', () => {
    const points = readMigrations()[0]!.statements[0]!;
    expect(statementsFor(points, ch26)).toEqual([points]);
  });
});
