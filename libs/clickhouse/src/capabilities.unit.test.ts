import { describe, expect, it } from 'vitest';
import { capabilities, deduplicatedInsertSettings, parseVersion, quorumInsertSettings, quorumReadSettings, synchronousInsertSettings } from './capabilities.ts';

describe('server capabilities by version', () => {
  it('18.16 (our local server, Ordinary database): no EXCHANGE, no async_insert, no deduplication token', () => {
    const caps = capabilities('18.16.1.1', 'Ordinary');
    expect(caps).toMatchObject({
      atomicDatabase: false,
      exchangeTables: false,
      knowsAsyncInsert: false,
      insertDeduplicationToken: false,
      deduplicatedInserts: false,
      columnCodecs: false,
      columnSettings: false,
    });
    expect(synchronousInsertSettings(caps)).toEqual({});
    expect(deduplicatedInsertSettings(caps, 'points:0=1-2')).toEqual({});
  });

  it('18.16 answers a three-part version string too', () => {
    expect(parseVersion('18.16.1')).toEqual([18, 16]);
  });

  it('25.8 on an Atomic database: EXCHANGE TABLES, async_insert turned off on inserts', () => {
    const caps = capabilities('25.8.3.1', 'Atomic');
    expect(caps).toMatchObject({
      atomicDatabase: true,
      exchangeTables: true,
      knowsAsyncInsert: true,
      insertDeduplicationToken: true,
      deduplicatedInserts: true,
      columnCodecs: true,
      columnSettings: true,
    });
    expect(synchronousInsertSettings(caps)).toEqual({ async_insert: 0 });
    expect(deduplicatedInsertSettings(caps, 'points:0=1-2')).toEqual({
      insert_deduplicate: 1,
      insert_deduplication_token: 'points:0=1-2',
      deduplicate_blocks_in_dependent_materialized_views: 1,
    });
  });

  it('26.9 (chDB) on an Atomic database', () => {
    const caps = capabilities('26.9.2.1', 'Atomic');
    expect(caps).toMatchObject({ version: '26.9.2.1', exchangeTables: true, knowsAsyncInsert: true, deduplicatedInserts: true });
    expect(synchronousInsertSettings(caps)).toEqual({ async_insert: 0 });
    expect(deduplicatedInsertSettings(caps, 'points_g2:1=7-9')).toMatchObject({ insert_deduplication_token: 'points_g2:1=7-9' });
  });

  it('26.9 on an Ordinary database: no EXCHANGE TABLES (it needs Atomic), no insert tokens (its catalog view cannot keep them)', () => {
    const caps = capabilities('26.9.2.1', 'Ordinary');
    expect(caps).toMatchObject({
      atomicDatabase: false,
      exchangeTables: false,
      knowsAsyncInsert: true,
      insertDeduplicationToken: true,
      deduplicatedInserts: false,
    });
    expect(deduplicatedInsertSettings(caps, 'points:0=1-2')).toEqual({});
  });

  it('the thresholds: async_insert from 21.11, deduplication tokens from 22.2', () => {
    expect(capabilities('21.10.1.1', 'Atomic').knowsAsyncInsert).toBe(false);
    expect(capabilities('21.11.1.1', 'Atomic').knowsAsyncInsert).toBe(true);
    expect(capabilities('22.1.1.1', 'Atomic').insertDeduplicationToken).toBe(false);
    expect(capabilities('22.2.1.1', 'Atomic').insertDeduplicationToken).toBe(true);
    expect(capabilities('22.1.1.1', 'Atomic').deduplicatedInserts).toBe(false);
    expect(capabilities('22.2.1.1', 'Atomic').deduplicatedInserts).toBe(true);
  });

  it('refuses what is not a version', () => {
    expect(() => capabilities('latest', 'Atomic')).toThrow(/not a ClickHouse version/);
  });
});

describe('insert quorum on a cluster', () => {
  it('a quorum of 2 or more asks every insert to wait for it and reads positions with sequential consistency; 0 and 1 ask nothing', () => {
    expect(quorumInsertSettings(2, 600_000)).toEqual({ insert_quorum: 2, insert_quorum_timeout: 600_000 });
    expect(quorumReadSettings(2)).toEqual({ select_sequential_consistency: 1 });
    for (const q of [0, 1]) {
      expect(quorumInsertSettings(q, 600_000)).toEqual({});
      expect(quorumReadSettings(q)).toEqual({});
    }
  });
});
