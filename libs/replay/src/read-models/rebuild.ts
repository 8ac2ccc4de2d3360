import { randomBytes } from 'node:crypto';
import { quoteIdentifier } from '@meridian/clickhouse';
import type { ReplayDeps } from '../deps.ts';
import { retry, RETRY_POLICIES } from '@meridian/retry';
import { topicOffsets, type Offsets } from '../bounds.ts';
import { tableEngines } from '../generations.ts';
import { readRanges } from '../log-reader.ts';
import { refuseReplicated } from '../swap.ts';

/** A read model's tables by role (e.g. tasks, byId, positions), the live set or a rebuild's. */
export type ReadModelTables = Readonly<Record<string, string>>;

export type ReadModelVerification = {
  /** Live rows compared: those whose last event is inside the rebuilt range (later changes are the live projector's). */
  readonly compared: number;
  /** Of those, rows the rebuild holds differently or not at all. */
  readonly differing: number;
  readonly verified: boolean;
};

type Persist = <T>(what: string, attempt: () => Promise<T>) => Promise<T>;
type Messages = ReadonlyArray<{ offset: string; value: Buffer | null }>;

/** What differs between the read models a rebuild can build (tasks, files). */
export type ReadModelKind = {
  readonly name: string;
  readonly topic: (platform: ReplayDeps) => string;
  readonly live: ReadModelTables;
  /** Where a rebuild writes: beside the live tables, never over them. */
  readonly rebuilt: ReadModelTables;
  /** Where a swap puts the live tables it replaces (kept until the next swap). */
  readonly retired: ReadModelTables;
  /**
   * A projection of the topic from its start, with the live projector's own step, writing into
   * the tables given at each call (the rebuilt ones, then after a swap the live names): its state
   * (the tasks fold, the next file seq) carries across calls. Returns the rows written.
   */
  start(platform: ReplayDeps, persist: Persist): (tables: ReadModelTables, partition: number, messages: Messages, last: number) => Promise<number>;
  /** Per partition, the last offset the live read model covers. */
  livePositions(platform: ReplayDeps): Promise<Map<number, number>>;
  /** Compares the live tables with rebuilt ones over the offsets before `ends`. */
  verify(platform: ReplayDeps, rebuilt: ReadModelTables, ends: Offsets): Promise<ReadModelVerification>;
};

export type ReadModelSwapMode = 'never' | 'if-verified' | 'always';

export type ReadModelRebuildResult = {
  readonly name: string;
  readonly tables: ReadModelTables;
  readonly events: number;
  readonly rows: number;
  /** Per partition, the end of what the rebuild covered before the swap (the live positions then, or the log's end). */
  readonly ends: Offsets;
  readonly ms: number;
  readonly verification: ReadModelVerification;
  /** After a swap: where the replaced live tables are kept, and the events projected after it. */
  readonly swapped: { readonly retired: ReadModelTables; readonly eventsAfter: number } | null;
  /** Why it was not swapped in, when a swap was asked for. */
  readonly notSwapped: string | null;
};

/**
 * `meridian replay rebuild tasks|files`: the topic, from its start to its end now, projected by
 * the live projector's own step into fresh tables beside the live read model, caught up to the
 * live positions, then verified against the live tables over that range. A rebuild has no
 * retention: it restores tasks the live read model has already let go of.
 *
 * The swap (asked for, and verified unless `always`), while ingestion runs: one multi-table
 * RENAME puts the live tables aside (`retired`) and the rebuilt ones under the live names. The
 * live projector writes by name, so its next batch lands in the new tables; what it wrote into
 * the old ones between the last catch-up and the RENAME is projected again after the swap, from
 * the rebuilt positions to the log's end. Rows are idempotent (a later offset wins; one written
 * twice is the same row), so both writers may write the same change. The live projector keeps
 * its positions and its fold in memory: both equal what the rebuild computes, the fold being
 * deterministic. For the moment between the RENAME and the end of that catch-up, the new tables
 * may lack the last changes (a read then waits or answers as for a lagging projection).
 */
export async function rebuildReadModel(
  platform: ReplayDeps, kind: ReadModelKind, swap: ReadModelSwapMode, onProgress?: (events: number) => void,
): Promise<ReadModelRebuildResult> {
  const started = performance.now();
  const { clickhouse } = platform;
  const topic = kind.topic(platform);
  const roles = Object.keys(kind.live);
  // A copy of a replicated table would share its ZooKeeper path: a replica of the live one, not a rebuild.
  const engines = await tableEngines(clickhouse);
  for (const role of roles) refuseReplicated(engines.get(kind.live[role]!), kind.live[role]);
  for (const role of roles) {
    await clickhouse.command({ query: `DROP TABLE IF EXISTS ${quoteIdentifier(kind.rebuilt[role]!)}` });
    await clickhouse.command({ query: `CREATE TABLE ${quoteIdentifier(kind.rebuilt[role]!)} AS ${quoteIdentifier(kind.live[role]!)}` });
  }
  const persist: Persist = (what, attempt) => retry(attempt, {
    ...RETRY_POLICIES.rebuildInsert,
    onRetry: (error, n, delay) => platform.logger.warn({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
  });
  const project = kind.start(platform, persist);
  let events = 0;
  let rows = 0;
  /** Per partition, the next offset the rebuild has not projected. */
  const covered = new Map<number, number>();

  /** Projects each partition from where the rebuild stands to `ends` (exclusive) into `tables`. */
  async function projectTo(ends: ReadonlyMap<number, number>, tables: ReadModelTables): Promise<number> {
    const ranges = [...ends].map(([partition, end]) => ({ topic, partition, start: covered.get(partition) ?? 0, end })).filter((r) => r.end > r.start);
    let read = 0;
    for await (const batch of readRanges(ranges, {
      kafka: platform.log.kafka,
      admin: platform.log.admin,
      groupId: `${platform.topicPrefix}replay-${kind.name}-${randomBytes(4).toString('hex')}`,
      sequential: false,
    })) {
      if (batch.messages.length === 0 && !batch.done) continue;
      const last = batch.done ? ends.get(batch.partition)! - 1 : Number(batch.messages[batch.messages.length - 1]!.offset);
      rows += await project(tables, batch.partition, batch.messages, last);
      covered.set(batch.partition, last + 1);
      read += batch.messages.length;
      events += batch.messages.length;
      onProgress?.(events);
    }
    for (const r of ranges) covered.set(r.partition, Math.max(covered.get(r.partition) ?? 0, r.end));
    return read;
  }

  const { low, end } = await topicOffsets(platform.log.admin, topic);
  for (const [partition, first] of low) covered.set(partition, first);
  await projectTo(end, kind.rebuilt);
  // The live read model may be ahead of the end read above (or behind it, when its projector
  // lags): catch up to its positions, so the verification compares the same range and a swap
  // hands the live names tables that are not behind.
  const livePositions = async () => new Map([...await kind.livePositions(platform)].map(([p, o]) => [p, o + 1]));
  const ahead = (at: ReadonlyMap<number, number>) => new Map([...at].filter(([p, e]) => e > (covered.get(p) ?? 0)));
  if (swap !== 'never') {
    // Twice: the second pass is short, and leaves the least for after the swap.
    for (let pass = 0; pass < 2; pass++) await projectTo(ahead(await livePositions()), kind.rebuilt);
  }
  const range = new Map(covered);
  const verification = await kind.verify(platform, kind.rebuilt, range);
  const result = { name: kind.name, tables: kind.rebuilt, ms: 0, verification, ends: range, swapped: null, notSwapped: null };
  const done = (extra: Partial<ReadModelRebuildResult>): ReadModelRebuildResult => ({ ...result, events, rows, ...extra, ms: performance.now() - started });
  if (swap === 'never') return done({});
  if (swap === 'if-verified' && !verification.verified) return done({ notSwapped: `verification failed: ${verification.differing} of ${verification.compared} live rows differ` });

  // One RENAME: the live names move to the rebuilt tables at once (a multi-table RENAME is one step).
  for (const role of roles) await clickhouse.command({ query: `DROP TABLE IF EXISTS ${quoteIdentifier(kind.retired[role]!)}` });
  const moves = roles.flatMap((role) => [
    `${quoteIdentifier(kind.live[role]!)} TO ${quoteIdentifier(kind.retired[role]!)}`,
    `${quoteIdentifier(kind.rebuilt[role]!)} TO ${quoteIdentifier(kind.live[role]!)}`,
  ]);
  await clickhouse.command({ query: `RENAME TABLE ${moves.join(', ')}` });
  const eventsAfter = await projectTo((await topicOffsets(platform.log.admin, topic)).end, kind.live);
  return done({ swapped: { retired: kind.retired, eventsAfter } });
}

/** Per partition, `kafka_partition = p AND kafka_offset < end`: the rows of a range. */
export function inRange(ends: Offsets): string {
  return [...ends].map(([p, e]) => `(kafka_partition = ${Math.trunc(p)} AND kafka_offset < ${Math.trunc(e)})`).join(' OR ') || '0';
}
