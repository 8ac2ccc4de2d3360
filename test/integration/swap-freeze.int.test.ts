import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createPointsSink } from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { freezeLive, unfreeze } from '@meridian/replay';
import { scratchDatabase } from '../support/scratch-database.ts';
import { waitFor } from '../support/wait.ts';

/**
 * A swap's freeze against the real server (18.16 here). The freeze statement waits for the writes
 * holding the live table's lock; a write that resolved the table while the statement waited gets
 * the lock after it and lands in the table put aside, after the statement returned. The frozen
 * positions must count it: the live projector was told its insert succeeded and never repeats it.
 */
describe('freezing the live table', () => {
  const { conn, client } = scratchDatabase();
  const sink = createPointsSink(client, 'points', { sealsTable: 'points_seals' });
  const rowsOf = async <T>(sql: string): Promise<T[]> => (await client.query({ query: sql, format: 'JSONEachRow' })).json<T>();
  const running = async (where: string) => Number((await rowsOf<{ n: string }>(`SELECT toString(count()) AS n FROM system.processes WHERE ${where}`))[0]!.n);

  it('waits for a live insert that took the table while the freeze waited, and its rows count in the frozen positions', async () => {
    // A: a live insert (named as the projector names them) that holds the table until released.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const lines = (from: number, n: number) =>
      Array.from(
        { length: n },
        (_, i) =>
          `{"metric_name":"a","ts":${from + i},"value":1,"updated_at":1,"task_id":"a","kafka_partition":0,"kafka_offset":${from + i},"row_in_batch":0}\n`,
      ).join('');
    const first = Buffer.from(lines(1, 40_000)); // about 5 MB: more than the server reads before it takes the table
    const aId = `points-insert:points:${randomUUID()}`;
    const a = client
      .exec({
        query: 'INSERT INTO points FORMAT JSONEachRow',
        query_id: aId,
        values: Readable.from(
          (async function* () {
            yield first;
            await gate;
            yield Buffer.from(lines(40_001, 10));
          })(),
        ),
      })
      .then(async (result) => {
        for await (const _ of result.stream) {
          /* drain */
        }
      });
    const timestamps = Array.from({ length: 200_000 }, (_, i) => i);
    const segment: Segment = {
      partition: 0,
      offset: 50_000,
      batch: { type: 'PointBatch', task_id: 'b', metric_name: 'b', updated_at: 1, timestamps, values: timestamps },
    };
    let freezing: Promise<number> | undefined;
    let b: Promise<void> | undefined;
    try {
      await waitFor('the first insert under way', async () => ((await running(`query_id = '${aId}'`)) > 0 ? true : undefined), 30_000, 20);
      await new Promise((r) => setTimeout(r, 300)); // it holds the table from its first block on

      // The freeze waits for A. B, the projector's next insert, takes the table meanwhile and queues behind the freeze.
      freezing = freezeLive(client, { m: 1, n: 2, database: conn.database, partitions: [0] });
      await waitFor('the freeze waiting', async () => ((await running(`query LIKE 'RENAME TABLE%'`)) > 0 ? true : undefined), 30_000, 20);
      b = sink.insert([segment]);
      await waitFor(
        'the second insert sent',
        async () => ((await running(`startsWith(query_id, 'points-insert:points:') AND query_id != '${aId}'`)) > 0 ? true : undefined),
        30_000,
        20,
      );
      await new Promise((r) => setTimeout(r, 300)); // B's body read and its table resolved: the live table, put aside by the freeze
    } finally {
      release();
    }
    await freezing;
    // Read the moment the freeze is done: B is in the table put aside, whole.
    const frozen = await rowsOf<{ o: string; n: string }>('SELECT toString(max(kafka_offset)) AS o, toString(count()) AS n FROM points_g1');
    expect(frozen).toEqual([{ o: '50000', n: String(40_010 + 200_000) }]);
    await a;
    await b;
    // Live inserts are refused while frozen; the table comes back whole.
    await expect(sink.insert([{ ...segment, offset: 60_000 }])).rejects.toThrow(/not supported by storage Merge/);
    expect(await unfreeze(client, 1, 2)).toBe(true);
    expect(await rowsOf('SELECT toString(count()) AS n FROM points')).toEqual([{ n: String(240_010) }]);
  });
});
