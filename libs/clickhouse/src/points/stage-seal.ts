import { randomUUID } from 'node:crypto';
import type { Omitted } from '@meridian/projection';
import { deduplicatedInsertSettings, serverCapabilities } from '../capabilities.ts';
import type { ClickHouseClient } from '../client.ts';
import type { PointsSink } from './sink.ts';
import type { Fence, SealOutcome, StagedShare, StageTargets } from './stage.ts';
import { checked, type StageNames, type StageReads, type StageWrites } from './stage-parts.ts';

/** PointsStages.seal: moves a committed share into points, exactly once whatever was done of it before a crash (stage.ts says how). */
export async function sealShare(
  client: ClickHouseClient,
  targets: StageTargets,
  names: StageNames,
  reads: StageReads,
  writes: StageWrites,
  given: StagedShare,
  refill: (stage: PointsSink) => Promise<Omitted>,
  fence: Fence = () => {},
): Promise<SealOutcome> {
  const { points, catalog, seals, tableOf } = names;
  const { number, rows, heldShare, inPoints } = reads;
  const { sink, rollupTargets, addRollupShare, named, attach, stopInserts, dropTable, open } = writes;
  const share = checked(given);
  const stage = tableOf(share.taskId, share.attempt, share.partition);
  const rest = `${stage}_rest`;
  const recorded = await number(`SELECT count() FROM ${seals} WHERE kafka_partition = ${share.partition} AND seal_offset = ${share.sealOffset}`);
  if (recorded > 0) {
    await dropTable(stage);
    await dropTable(rest);
    return { how: 'recorded before', refilled: false, points: 0 };
  }

  // A writer that gave up on a slow stage insert (it then counts the stage broken) leaves it
  // running on the server: the stage is only checked once no insert into it is under way,
  // so no late block can land after the check (and be attached twice over the refill).
  const killed = await stopInserts(stage);
  let refilled = false;
  // The rows the stage holds: the seal's, less what a refill left out (heldShare checked them).
  let held = share.points;
  let span = killed ? null : await heldShare(stage, share);
  if (span === null) {
    await dropTable(stage);
    const omitted = await refill(await open(share.taskId, share.attempt, share.partition));
    refilled = true;
    held = share.points - omitted.points;
    span = await heldShare(stage, share, omitted);
    if (span === null)
      throw new Error(`stage ${stage} does not hold the ${share.points} points in ${share.batches} batches its seal states, even refilled from the log`);
  }

  const attached = await number(`SELECT count() FROM (${inPoints(stage, share.partition, span)})`);
  let how: SealOutcome['how'] = 'found attached';
  let moved = 0;
  if (attached === 0) {
    fence();
    await attach(stage);
    // ATTACH runs no materialized view: the stage's share of the catalog goes in explicitly,
    // under a token of its seal where the catalog keeps tokens (an equal block of another
    // upload's share must not be dropped as a repeat of this one).
    fence();
    await named(
      `INSERT INTO ${catalog} SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts FROM ${stage} GROUP BY metric_name`,
      deduplicatedInsertSettings(await serverCapabilities(client), `${targets.catalog}:seal:${share.partition}=${share.sealOffset}`),
    );
    // The rollups likewise, each under a token of its own.
    for (const rollup of rollupTargets) await addRollupShare(rollup, stage, share, fence);
    how = 'attached';
    moved = held;
  } else {
    // The stage's own count, not the seal's: a refill that left out a bad batch holds less.
    if (attached < (await number(`SELECT count() FROM ${stage}`))) {
      // A server that died inside a multi-part ATTACH: some of the stage's parts are in. Parts
      // hold whole batches (each stage insert is of whole batches), so the rest is the batches
      // points lacks, carried by a second stage.
      await dropTable(rest);
      await client.command({ query: `CREATE TABLE ${rest} AS ${points}` });
      await client.command({ query: `INSERT INTO ${rest} SELECT * FROM ${stage} WHERE kafka_offset NOT IN (${inPoints(stage, share.partition, span)})` });
      moved = await number(`SELECT count() FROM ${rest}`);
      fence();
      await attach(rest);
    }
    // Whatever of the catalog and rollup steps was done before the crash: each gets what it lacks.
    fence();
    const offsets = await rows<{ o: string }>(`SELECT DISTINCT toString(kafka_offset) AS o FROM ${stage}`);
    await sink.repairCatalog(offsets.map((r) => ({ partition: share.partition, offset: Number(r.o) })));
  }
  fence();
  // Named like the attach: a swap's freeze waits for every write of a seal under way (replay's freezeLive).
  await client.insert({
    table: targets.seals,
    format: 'JSONEachRow',
    values: [{ kafka_partition: share.partition, seal_offset: share.sealOffset, task_id: share.taskId, attempt: share.attempt }],
    query_id: `${names.attachPrefix}${randomUUID()}`,
  });
  await dropTable(stage);
  await dropTable(rest);
  return { how, refilled, points: moved };
}
