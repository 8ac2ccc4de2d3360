import { randomUUID } from 'node:crypto';
import { quorumInsertSettings } from '../capabilities.ts';
import { ROLLUPS, rollupStatesSql, type Resolution } from '../rollups/sql.ts';
import type { SinkContext } from './sink-context.ts';
import type { BatchPosition } from './sink.ts';

/**
 * The catalog (migration 002) is a view written by the points' own INSERT, on the server,
 * after the points part (and after its quorum wait). A server killed between the two leaves
 * the points stored and the catalog short of that block; the retry of the same block is then
 * dropped as a duplicate, and a duplicate runs no view. The projector is the only writer of
 * its partitions' metrics and has settled its inserts, so for those metrics the catalog must
 * count what `points` counts: the difference is added as one aggregate state per metric (a
 * count of the missing points, the metric's first and last timestamps, which merge without
 * harm). Metrics are found from the batches' positions (integers), never named in the SQL.
 */
export async function repairCatalog(ctx: SinkContext, batches: readonly BatchPosition[]): Promise<number> {
  const { client, table, options, quorum, idPrefix, rows, awaitGone } = ctx;
  const catalog = options.catalogTable ?? (table === 'points' ? 'metric_catalog' : null);
  if (catalog === null || batches.length === 0) return 0;
  if (!/^[.A-Za-z_][.A-Za-z0-9_]*$/.test(catalog)) throw new Error(`not a catalog table: ${catalog}`);
  if (quorum.replicas >= 2) {
    // The writer holds every part the replication log has (its own and the other replicas').
    for (const t of ['points', '`.inner.metric_catalog`']) await client.command({ query: `SYSTEM SYNC REPLICA ${t}` });
  }
  const blocks = batches.map((s) => {
    if (!Number.isInteger(s.partition) || !Number.isInteger(s.offset)) throw new Error('not a segment position');
    return `(${s.partition}, ${s.offset})`;
  });
  const metrics = `SELECT DISTINCT metric_name FROM ${table} WHERE (kafka_partition, kafka_offset) IN (${blocks.join(', ')})`;
  const short = `SELECT metric_name, p.n - c.n AS missing, first, last FROM
      (SELECT metric_name, count() AS n, min(ts) AS first, max(ts) AS last FROM ${table} WHERE metric_name IN (${metrics}) GROUP BY metric_name) AS p
      ANY LEFT JOIN (SELECT metric_name, countMerge(points) AS n FROM \`${catalog}\` WHERE metric_name IN (${metrics}) GROUP BY metric_name) AS c
      USING metric_name WHERE p.n > c.n`;
  await repairRollups(ctx, blocks.join(', '));
  const missing = await rows<{ missing: string }>(short);
  const total = missing.reduce((sum, r) => sum + Number(r.missing), 0);
  if (total === 0) return 0;
  // Named like an insert, so the positions wait for one still running after its client died,
  // and its outcome is known before this fails: a retry must not add the difference again.
  const queryId = `${idPrefix}${randomUUID()}`;
  try {
    await client.command({
      query: `INSERT INTO \`${catalog}\` SELECT metric_name, countState() AS points, minState(first) AS first_ts, maxState(last) AS last_ts
        FROM (SELECT metric_name, first, last, arrayJoin(range(toUInt64(missing))) AS k FROM (${short})) GROUP BY metric_name`,
      query_id: queryId,
      clickhouse_settings: quorumInsertSettings(quorum.replicas, quorum.timeoutMs),
    });
  } catch (error) {
    await awaitGone([queryId], 300_000);
    throw error;
  }
  return total;
}

/**
 * The rollups' share of stored blocks whose views did not run (as for the catalog, below): per
 * bucket the blocks' rows touch, a rollup counting the points' rows less the blocks' lacks
 * exactly them, and gets their states; one counting them all is complete. `blocks` is a list of
 * (partition, offset) integer pairs.
 */
export async function repairRollups(ctx: SinkContext, blocks: string): Promise<void> {
  const { client, table, options, quorum, idPrefix, awaitGone } = ctx;
  const rollupTables: Readonly<Partial<Record<Resolution, string>>> =
    options.rollupTables ?? (table === 'points' ? { '1m': ROLLUPS['1m'].table, '1h': ROLLUPS['1h'].table } : {});
  for (const [resolution, rollup] of Object.entries(rollupTables) as [Resolution, string][]) {
    if (!/^[.A-Za-z_][.A-Za-z0-9_]*$/.test(rollup)) throw new Error(`not a rollup table: ${rollup}`);
    const w = ROLLUPS[resolution].stepMs;
    const ofBlocks = `FROM ${table} WHERE (kafka_partition, kafka_offset) IN (${blocks})`;
    const touched = `SELECT metric_name, intDiv(ts, ${w}) * ${w} AS bucket, count() AS b ${ofBlocks} GROUP BY metric_name, bucket`;
    const keys = `SELECT metric_name, bucket FROM (${touched})`;
    const stored = `SELECT metric_name, intDiv(ts, ${w}) * ${w} AS bucket, count() AS p FROM ${table} WHERE (metric_name, intDiv(ts, ${w}) * ${w}) IN (${keys}) GROUP BY metric_name, bucket`;
    const counted = `SELECT metric_name, bucket, countMerge(rows) AS r FROM \`${rollup}\` WHERE (metric_name, bucket) IN (${keys}) GROUP BY metric_name, bucket`;
    const lacking = `SELECT metric_name, bucket FROM (SELECT metric_name, bucket, b, p FROM (${touched}) AS k ANY LEFT JOIN (${stored}) AS s USING metric_name, bucket) AS ks ANY LEFT JOIN (${counted}) AS c USING metric_name, bucket WHERE r = p - b`;
    const queryId = `${idPrefix}${randomUUID()}`;
    try {
      await client.command({
        query: `INSERT INTO \`${rollup}\` ${rollupStatesSql(resolution, `(SELECT * ${ofBlocks} AND (metric_name, intDiv(ts, ${w}) * ${w}) IN (${lacking}))`)}`,
        query_id: queryId,
        clickhouse_settings: quorumInsertSettings(quorum.replicas, quorum.timeoutMs),
      });
    } catch (error) {
      await awaitGone([queryId], 300_000);
      throw error;
    }
  }
}
