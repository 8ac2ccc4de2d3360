import { randomBytes } from 'node:crypto';
import { quoteIdentifier } from '@meridian/clickhouse';
import type { Offsets } from '@meridian/domain';
import type { ReplayDeps } from '../deps.ts';
import { retry, RETRY_POLICIES } from '@meridian/retry';
import { tableEngines } from '../generations.ts';
import { nudgeGroup, refuseReplicated } from '../swap.ts';

/** A read model's tables by role (e.g. tasks, byId, positions), the live set or a rebuild's. */
export type ReadModelTables = Readonly<Record<string, string>>;

/** A read model's tables under the live names plus `suffix` (`_rebuilt`, `_retired`, `_frozen`). */
export function suffixed<T extends ReadModelTables>(live: T, suffix: string): T {
  return Object.fromEntries(Object.entries(live).map(([role, table]) => [role, `${table}${suffix}`])) as T;
}

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
  readonly topic: (deps: ReplayDeps) => string;
  readonly live: ReadModelTables;
  /** Where a rebuild writes: beside the live tables, never over them. */
  readonly rebuilt: ReadModelTables;
  /** Where a swap puts the live tables it replaces (kept until the next swap). */
  readonly retired: ReadModelTables;
  /** Read-only stand-ins (Merge tables over the retired names) that hold the live names while a swap holds live writes. */
  readonly frozen: ReadModelTables;
  /** The live projector's consumer group (the swap makes it rebalance when it must re-read its positions). */
  readonly groupId: (deps: ReplayDeps) => string;
  /**
   * A projection of the topic from its start, with the live projector's own step, writing into
   * the tables given at each call (the rebuilt ones, then after a swap the live names): its state
   * (the tasks fold, the next file seq) carries across calls. Returns the rows written.
   */
  start(deps: ReplayDeps, persist: Persist): (tables: ReadModelTables, partition: number, messages: Messages, last: number) => Promise<number>;
  /** Per partition, the last offset the read model in `tables` covers. */
  positions(deps: ReplayDeps, tables: ReadModelTables): Promise<Map<number, number>>;
  /** Compares the live tables with rebuilt ones over the offsets before `ends`. */
  verify(deps: ReplayDeps, rebuilt: ReadModelTables, ends: Offsets): Promise<ReadModelVerification>;
};

export type ReadModelRebuildOptions = {
  readonly onProgress?: (events: number) => void;
  /** How long a swap waits for a lagging live projector to reach what the rebuild covers before holding its writes (default 20 s). */
  readonly waitForLiveMs?: number;
  /** Called after the last catch-up and before live writes are held (tests write into the live read model here). */
  readonly beforeFreeze?: () => Promise<void>;
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
  /**
   * After a swap: where the replaced live tables are kept, the events projected while live writes
   * were held, for how long, and whether the live projector was made to re-read its positions.
   */
  readonly swapped: { readonly retired: ReadModelTables; readonly eventsFrozen: number; readonly frozenMs: number; readonly nudged: boolean } | null;
  /** Why it was not swapped in, when a swap was asked for. */
  readonly notSwapped: string | null;
};

/**
 * `meridian replay rebuild tasks|files`: the topic, from its start to its end now, projected by
 * the live projector's own step into fresh tables beside the live read model, caught up to the
 * live positions, then verified against the live tables over that range. A rebuild has no
 * retention: it restores tasks the live read model has already let go of.
 *
 * The swap (asked for, and verified unless `always`), while ingestion runs, hands the live names
 * tables that hold exactly what the live ones hold, as swap.ts does for points. The live
 * projector cannot simply go on in new tables that differ: the files step reads each file's
 * stored row back and writes it with its last event's offset, so a change it wrote into the old
 * tables and the rebuild lacks would be lost for good (the next change of that file starts from
 * the rebuilt row, and its offset then hides the lost one from any catch-up).
 *
 *   1. Catch up to the live positions (twice), and give a lagging live projector a bounded time
 *      to reach what the rebuild covers.
 *   2. Freeze: one RENAME puts the live tables aside (`retired`) and read-only stand-ins (Merge
 *      tables over them) under the live names. Reads go on unchanged; the live projector's writes
 *      fail and it retries them. The RENAME waits for a write in flight, so the positions of the
 *      retired tables are final once it returns.
 *   3. Catch up the rebuild exactly to those positions.
 *   4. Swap in: one RENAME moves the stand-ins out and the rebuilt tables under the live names.
 *      The live projector's retried write lands there, after the positions it knew, which the new
 *      tables share with the old (its fold in memory, the tasks not finished and the next file
 *      seq, is the same deterministic fold of the same range).
 *
 * When the rebuild covers more than the frozen tables (a live projector stopped or stuck), its
 * positions in memory would be wrong for the new tables: the stand-ins are taken away (a read or
 * write of the read model then fails, briefly) and its group is made to rebalance, so every member
 * re-reads its positions and fold from the new tables, before they come in.
 *
 * Stays one function: the numbered steps above, in order, sharing what the rebuild has covered so far; split,
 * the order of the catch-up, the freeze and the swap would be scattered across calls.
 */
export async function rebuildReadModel(
  deps: ReplayDeps,
  kind: ReadModelKind,
  swap: ReadModelSwapMode,
  options: ReadModelRebuildOptions = {},
): Promise<ReadModelRebuildResult> {
  const { onProgress, waitForLiveMs = 20_000 } = options;
  const started = performance.now();
  const { clickhouse } = deps;
  const topic = kind.topic(deps);
  const roles = Object.keys(kind.live);
  // A copy of a replicated table would share its ZooKeeper path: a replica of the live one, not a rebuild.
  const engines = await tableEngines(clickhouse);
  for (const role of roles) refuseReplicated(engines.get(kind.live[role]!), kind.live[role]);
  // A swap stopped while live writes were held left the stand-ins under the live names: put the live tables back first.
  if (roles.some((role) => engines.get(kind.live[role]!) === 'Merge')) await unfreezeReadModel(deps, kind, true);
  for (const role of roles) {
    await clickhouse.command({ query: `DROP TABLE IF EXISTS ${quoteIdentifier(kind.rebuilt[role]!)}` });
    await clickhouse.command({ query: `CREATE TABLE ${quoteIdentifier(kind.rebuilt[role]!)} AS ${quoteIdentifier(kind.live[role]!)}` });
  }
  const persist: Persist = (what, attempt) =>
    retry(attempt, {
      ...RETRY_POLICIES.rebuildInsert,
      onRetry: (error, n, delay) => deps.logger.warn({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
    });
  const project = kind.start(deps, persist);
  let events = 0;
  let rows = 0;
  /** Per partition, the next offset the rebuild has not projected. */
  const covered = new Map<number, number>();

  /** Projects each partition from where the rebuild stands to `ends` (exclusive) into `tables`. */
  async function projectTo(ends: ReadonlyMap<number, number>, tables: ReadModelTables): Promise<number> {
    const ranges = [...ends].map(([partition, end]) => ({ topic, partition, start: covered.get(partition) ?? 0, end })).filter((r) => r.end > r.start);
    let read = 0;
    for await (const batch of deps.log.readRanges(ranges, {
      groupId: `${deps.topicPrefix}replay-${kind.name}-${randomBytes(4).toString('hex')}`,
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

  const { low, end } = await deps.log.offsets(topic);
  for (const [partition, first] of low) covered.set(partition, first);
  await projectTo(end, kind.rebuilt);
  // The live read model may be ahead of the end read above (or behind it, when its projector
  // lags): catch up to its positions, so the verification compares the same range and a swap
  // has the least to catch up while live writes are held.
  /** Per partition, the next offset the read model in `tables` has not covered (a partition it has no position for: the log's start). */
  const nextOf = async (tables: ReadModelTables) => {
    const at = await kind.positions(deps, tables);
    return new Map([...low].map(([p, first]) => [p, Math.max(first, (at.get(p) ?? -1) + 1)]));
  };
  const ahead = (at: ReadonlyMap<number, number>) => new Map([...at].filter(([p, e]) => e > (covered.get(p) ?? 0)));
  if (swap !== 'never') {
    // Twice: the second pass is short, and leaves the least for while live writes are held.
    for (let pass = 0; pass < 2; pass++) await projectTo(ahead(await nextOf(kind.live)), kind.rebuilt);
  }
  const range = new Map(covered);
  const verification = await kind.verify(deps, kind.rebuilt, range);
  const result = { name: kind.name, tables: kind.rebuilt, ms: 0, verification, ends: range, swapped: null, notSwapped: null };
  const done = (extra: Partial<ReadModelRebuildResult>): ReadModelRebuildResult => ({ ...result, events, rows, ...extra, ms: performance.now() - started });
  if (swap === 'never') return done({});
  if (swap === 'if-verified' && !verification.verified)
    return done({ notSwapped: `verification failed: ${verification.differing} of ${verification.compared} live rows differ` });

  // A rebuild to the log's end may be ahead of a live projector that lags: give it time to pass.
  const reached = (theirs: ReadonlyMap<number, number>) => [...covered].every(([p, c]) => (theirs.get(p) ?? 0) >= c);
  for (const deadline = Date.now() + waitForLiveMs; Date.now() < deadline && !reached(await nextOf(kind.live));) await new Promise((r) => setTimeout(r, 250));

  await options.beforeFreeze?.();
  const database = await currentDatabase(deps);
  const q = (role: string, tables: ReadModelTables) => quoteIdentifier(tables[role]!);
  for (const role of roles) {
    await clickhouse.command({ query: `DROP TABLE IF EXISTS ${q(role, kind.retired)}` });
    await clickhouse.command({ query: `DROP TABLE IF EXISTS ${q(role, kind.frozen)}` });
    await clickhouse.command({
      query: `CREATE TABLE ${q(role, kind.frozen)} AS ${q(role, kind.live)} ENGINE = Merge('${database}', '^${kind.retired[role]!}$')`,
    });
  }
  await clickhouse.command({
    query: `RENAME TABLE ${roles.map((role) => `${q(role, kind.live)} TO ${q(role, kind.retired)}, ${q(role, kind.frozen)} TO ${q(role, kind.live)}`).join(', ')}`,
  });
  const frozenAt = performance.now();
  let standInPlace = true;
  let nudged = false;
  let eventsFrozen = 0;
  try {
    const final = await nextOf(kind.retired);
    eventsFrozen = await projectTo(ahead(final), kind.rebuilt);
    const short = [...final].filter(([p, e]) => (covered.get(p) ?? 0) < e);
    if (short.length > 0) throw new Error(`the rebuild cannot reach the live positions in partitions ${short.map(([p]) => p).join(', ')}`);
    if ([...covered].some(([p, c]) => c > (final.get(p) ?? 0))) {
      // The live projector's positions and fold in memory are behind the rebuilt tables: no member
      // may read or write the read model until every member has rejoined (and so forgotten them).
      await clickhouse.command({ query: `RENAME TABLE ${roles.map((role) => `${q(role, kind.live)} TO ${q(role, kind.frozen)}`).join(', ')}` });
      standInPlace = false;
      await nudgeGroup(deps.log, kind.groupId(deps), topic, deps.logger);
      nudged = true;
    }
    await clickhouse.command({
      query: `RENAME TABLE ${roles
        .flatMap((role) => [...(standInPlace ? [`${q(role, kind.live)} TO ${q(role, kind.frozen)}`] : []), `${q(role, kind.rebuilt)} TO ${q(role, kind.live)}`])
        .join(', ')}`,
    });
  } catch (error) {
    await unfreezeReadModel(deps, kind, standInPlace).catch((e: unknown) => deps.logger.error({ err: e }, `could not put the live ${kind.name} tables back`));
    throw error;
  }
  const frozenMs = performance.now() - frozenAt;
  for (const role of roles) await clickhouse.command({ query: `DROP TABLE IF EXISTS ${q(role, kind.frozen)}` });
  return done({ swapped: { retired: kind.retired, eventsFrozen, frozenMs, nudged } });
}

/** Puts the live tables a swap froze back under the live names (the stand-ins there, or the names missing). */
async function unfreezeReadModel(deps: ReplayDeps, kind: ReadModelKind, standInPlace: boolean): Promise<void> {
  const roles = Object.keys(kind.live);
  const moves = roles.flatMap((role) => [
    ...(standInPlace ? [`${quoteIdentifier(kind.live[role]!)} TO ${quoteIdentifier(`${kind.frozen[role]!}_${Date.now()}`)}`] : []),
    `${quoteIdentifier(kind.retired[role]!)} TO ${quoteIdentifier(kind.live[role]!)}`,
  ]);
  await deps.clickhouse.command({ query: `RENAME TABLE ${moves.join(', ')}` });
  const engines = await tableEngines(deps.clickhouse);
  for (const [name, engine] of engines) {
    if (engine === 'Merge' && roles.some((role) => name.startsWith(kind.frozen[role]!)))
      await deps.clickhouse.command({ query: `DROP TABLE IF EXISTS ${quoteIdentifier(name)}` });
  }
}

async function currentDatabase(deps: ReplayDeps): Promise<string> {
  const [row] = await (await deps.clickhouse.query({ query: 'SELECT currentDatabase() AS name', format: 'JSONEachRow' })).json<{ name: string }>();
  if (!row || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(row.name)) throw new Error(`not a database name a stand-in can name: ${row?.name}`);
  return row.name;
}

/** Per partition, `kafka_partition = p AND kafka_offset < end`: the rows of a range. */
export function inRange(ends: Offsets): string {
  return [...ends].map(([p, e]) => `(kafka_partition = ${Math.trunc(p)} AND kafka_offset < ${Math.trunc(e)})`).join(' OR ') || '0';
}
