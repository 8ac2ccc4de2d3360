import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { isUuid, parseDateBound } from '@meridian/domain';
import type { CliServices } from '../cli-services.ts';
import {
  BoundError,
  dropGeneration,
  formatProgress,
  formatVerification,
  listGenerations,
  parseBound,
  parseGeneration,
  rebuildPoints,
  rebuildTask,
  rebuildReadModel,
  FILES_READ_MODEL,
  TASKS_READ_MODEL,
  requestRebuildTask,
  swapGeneration,
  unfreeze,
  verifyTables,
  readRegistry,
  pointsTable,
  sealsTable,
  LIVE_POINTS,
  LIVE_SEALS,
  type RebuildProgress,
  type RebuildPointsResult,
  type ReadModelKind,
  type ReadModelSwapMode,
  type SwapMode,
  type SwapResult,
} from '@meridian/replay';
import { decodeExportCursor, encodeExportCursor, ExportRequestError, planExport, streamExport, type ExportFormat } from '@meridian/export';

export const replayUsage = `  meridian replay rebuild points [--from <time|offset>] [--to <time|offset>] [--swap | --swap-if-verified]
                                   [--database <name>] [--batch-rows <n>] [--detach] [--json] [--quiet]
                                                 project the points topic into a new generation (points_g<N>),
                                                 verify it against the live table, swap it in when asked;
                                                 with --database: into <name>.points (a point-in-time copy).
                                                 A task (GET /api/v1/tasks/<id>); --detach runs it in the background
  meridian replay rebuild tasks|files [--swap | --swap-if-verified] [--json]
                                                 project the tasks or files topic, from its start, into <table>_rebuilt
                                                 (beside the live read model, retention not applied), catch it up
                                                 to the live positions, verify it against the live tables, and with
                                                 --swap(-if-verified) rename it in (the old kept as <table>_retired)
  meridian replay list [--json]                  generations of the points projection
  meridian replay verify <generation> [--json]   compare a generation with the live table
  meridian replay swap <generation>              catch a generation up and swap it in
  meridian replay drop <generation>              drop a kept generation's tables
  meridian replay unfreeze                       put the live table back after an interrupted swap
  meridian events export [--from <time>] [--to <time>] [--types A,B] [--format avro|ndjson]
                         [--out <file>] [--max-events <n>] [--cursor <c>]
                                                 the raw events of a time range (record timestamps)`;

export class ReplayUsageError extends Error {}

/** Where progress goes (stderr) and where exported bytes go (stdout) unless told otherwise. */
export type Io = { readonly err: Writable & { isTTY?: boolean }; readonly out: Writable };
const processIo: Io = { err: process.stderr, out: process.stdout };

function progressWriter(io: Io, quiet: boolean) {
  let last = '';
  const tty = io.err.isTTY === true;
  return {
    progress(phase: string, p: RebuildProgress) {
      if (quiet) return;
      const line = `${phase}: ${formatProgress(p)}`;
      if (tty) io.err.write(`\r\x1b[2K${line}`);
      else io.err.write(`${line}\n`);
      last = line;
    },
    phase(text: string) {
      if (quiet) return;
      if (tty && last) io.err.write('\n');
      last = '';
      io.err.write(`${text}\n`);
    },
    end() {
      if (tty && last) io.err.write('\n');
      last = '';
    },
  };
}

const n = (x: number) => Math.round(x).toLocaleString('en');

function bound(text: string | undefined, which: 'from' | 'to') {
  if (text === undefined) return undefined;
  try {
    return parseBound(text, which);
  } catch (error) {
    if (error instanceof BoundError) throw new ReplayUsageError(error.message);
    throw error;
  }
}

function generationArg(positionals: string[], verb: string): number {
  if (positionals.length !== 1) throw new ReplayUsageError(`replay ${verb} needs exactly one generation`);
  try {
    return parseGeneration(positionals[0]!);
  } catch (error) {
    throw new ReplayUsageError((error as Error).message);
  }
}

export async function runReplay(services: CliServices, verb: string, args: readonly string[], io: Io = processIo): Promise<string> {
  switch (verb) {
    case 'rebuild':
      return rebuild(services, args, io);
    case 'list':
      return list(services, args);
    case 'verify':
      return verify(services, args);
    case 'swap':
      return swap(services, args, io);
    case 'drop': {
      const { positionals } = parseArgs({ args: [...args], allowPositionals: true });
      const g = generationArg(positionals, 'drop');
      const dropped = await dropGeneration(services.clickhouse, g);
      return dropped.length > 0 ? `dropped generation ${g}: ${dropped.join(', ')}` : `generation ${g} had no tables left`;
    }
    case 'unfreeze': {
      const live = [...(await readRegistry(services.clickhouse)).values()].find((g) => g.state === 'live')?.generation ?? 1;
      return (await unfreeze(services.clickhouse, live)) ? `${LIVE_POINTS} is generation ${live}'s table again` : `${LIVE_POINTS} is not frozen: nothing to do`;
    }
    default:
      throw new ReplayUsageError(`unknown command: replay ${verb}`);
  }
}

// Stays one function: one command's steps in order (its options checked, the task queued, then detached or
// run to its end); split, which check precedes the task being queued would be scattered.
async function rebuild(services: CliServices, args: readonly string[], io: Io): Promise<string> {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      swap: { type: 'boolean' },
      'swap-if-verified': { type: 'boolean' },
      database: { type: 'string' },
      'batch-rows': { type: 'string' },
      json: { type: 'boolean' },
      quiet: { type: 'boolean' },
      detach: { type: 'boolean' },
      'task-id': { type: 'string' },
    },
  });
  const [projection] = positionals;
  if (positionals.length !== 1) throw new ReplayUsageError('replay rebuild needs one projection: points or tasks');
  if (projection === 'catalog') throw new ReplayUsageError('the metric catalog is rebuilt with the points: replay rebuild points');
  if (projection === 'tasks' || projection === 'files')
    return rebuildReadModelCommand(services, projection === 'tasks' ? TASKS_READ_MODEL : FILES_READ_MODEL, values, io);
  if (projection === 'accounts') {
    throw new ReplayUsageError("accounts are not stored in ClickHouse: every api and ingest process folds them from their newest snapshot and the log's tail");
  }
  if (projection !== 'points' && projection !== 'all')
    throw new ReplayUsageError(`unknown projection ${projection}: points (with its catalog) is the one stored in ClickHouse`);
  if (values.swap && values['swap-if-verified']) throw new ReplayUsageError('give --swap or --swap-if-verified, not both');
  if (values.database !== undefined && (values.swap || values['swap-if-verified'])) throw new ReplayUsageError('a rebuild into --database is never swapped in');
  if (values.database !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(values.database)) throw new ReplayUsageError('--database must be an identifier');
  const batchRows = values['batch-rows'] === undefined ? undefined : Number(values['batch-rows']);
  if (batchRows !== undefined && (!Number.isInteger(batchRows) || batchRows < 1 || batchRows > 1_000_000))
    throw new ReplayUsageError('--batch-rows must be 1 to 1000000');
  const mode: SwapMode = values.swap ? 'always' : values['swap-if-verified'] ? 'if-verified' : 'never';
  const from = bound(values.from, 'from');
  const to = bound(values.to, 'to');
  const out = progressWriter(io, values.quiet === true || values.json === true);
  // The rebuild is a task of the tasks topic: RebuildRequested queues it (here, or by the
  // parent of a detached run, which passes --task-id), its progress and end follow.
  const taskIdGiven = values['task-id'];
  if (taskIdGiven !== undefined && !isUuid(taskIdGiven)) throw new ReplayUsageError('--task-id must be a task id');
  const taskId =
    taskIdGiven ??
    (await requestRebuildTask(services, {
      user_name: 'cli',
      projection: 'points',
      from: values.from ?? null,
      to: values.to ?? null,
      database: values.database ?? null,
      swap: mode === 'if-verified' ? 'if_verified' : mode,
    }));
  if (values.detach) {
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('../main.ts', import.meta.url)), 'replay', 'rebuild', ...args.filter((a) => a !== '--detach'), '--task-id', taskId, '--quiet'],
      {
        detached: true,
        stdio: 'ignore',
        env: process.env,
      },
    );
    child.unref();
    return values.json ? JSON.stringify({ task_id: taskId }) : `rebuild running in the background as task ${taskId} (GET /api/v1/tasks/${taskId})`;
  }
  if (!values.json) io.err.write(`task ${taskId}\n`);
  const task = rebuildTask(services, taskId);
  await task.started();
  let result: RebuildPointsResult;
  try {
    result = await rebuildPoints(services, {
      ...(from ? { from } : {}),
      ...(to ? { to } : {}),
      ...(values.database !== undefined ? { database: values.database } : {}),
      ...(batchRows !== undefined ? { batchRows } : {}),
      swap: mode,
      onProgress: (phase, p) => {
        out.progress(phase, p);
        if (phase === 'rebuild') task.progress(p.points);
      },
      onPhase: (text) => out.phase(text),
    });
  } catch (error) {
    await task.failed(`the rebuild stopped: ${(error as Error).message}`).catch(() => undefined);
    throw error;
  } finally {
    out.end();
  }
  await task.succeeded(result);
  if (values.json) return JSON.stringify({ task_id: taskId, ...result }, (_k, v: unknown) => (v instanceof Map ? Object.fromEntries(v) : v));
  return describeRebuild(result);
}

/** A read model (tasks, files) rebuilt beside the live one, verified, and swapped in when asked; no task of its own. */
async function rebuildReadModelCommand(
  services: CliServices,
  kind: ReadModelKind,
  values: Record<string, string | boolean | undefined>,
  io: Io,
): Promise<string> {
  const given = ['from', 'to', 'database', 'batch-rows', 'detach', 'task-id'].filter((o) => values[o] !== undefined);
  if (given.length > 0) throw new ReplayUsageError(`replay rebuild ${kind.name} takes no --${given[0]}: it rebuilds the whole log beside the live tables`);
  if (values.swap && values['swap-if-verified']) throw new ReplayUsageError('give --swap or --swap-if-verified, not both');
  const mode: ReadModelSwapMode = values.swap ? 'always' : values['swap-if-verified'] ? 'if-verified' : 'never';
  const out = progressWriter(io, values.quiet === true || values.json === true);
  const started = performance.now();
  let reported = 0;
  const progress = (events: number) => {
    const now = performance.now();
    if (now - reported < 1000) return;
    reported = now;
    out.phase(`${kind.name} rebuild: ${n(events)} events read in ${((now - started) / 1000).toFixed(1)} s`);
  };
  const r = await rebuildReadModel(services, kind, mode, { onProgress: progress }).finally(() => out.end());
  // Asked to swap and not swapped: the command failed at what it was asked (exit code 1).
  if (r.notSwapped !== null) throw new Error(`${kind.name} rebuilt into ${r.tables[Object.keys(r.tables)[0]!]} but not swapped in: ${r.notSwapped}`);
  if (values.json) return JSON.stringify({ ...r, ends: Object.fromEntries(r.ends) });
  const v = r.verification;
  return [
    `${kind.name} rebuilt into ${Object.values(r.tables).join(', ')}: ${n(r.rows)} rows written from ${n(r.events)} events in ${(r.ms / 1000).toFixed(1)} s`,
    v.verified
      ? `verified: the ${n(v.compared)} live rows inside the rebuilt range are identical`
      : `NOT verified: ${n(v.differing)} of ${n(v.compared)} live rows differ or are missing`,
    ...(r.swapped
      ? [
          `swapped in: the rebuilt tables are live; the replaced ones are kept as ${Object.values(r.swapped.retired).join(', ')} until the next swap (live writes held ${Math.round(r.swapped.frozenMs)} ms, ${n(r.swapped.eventsFrozen)} events projected meanwhile${r.swapped.nudged ? '; the live projector was made to re-read its positions' : ''})`,
        ]
      : []),
  ].join('\n');
}

function describeRebuild(r: RebuildPointsResult): string {
  const s = r.stats;
  const rate = s.ms > 0 ? (s.points * 1000) / s.ms : 0;
  const lines = [
    `${r.generation === null ? `rebuilt ${r.database}.${r.table}` : `generation ${r.generation} built as ${r.table}`}: ${n(s.points)} points from ${n(s.batches)} batches, ${n(s.events)} events read in ${(s.ms / 1000).toFixed(1)} s (${n(rate)} points/s, ${n(s.ms > 0 ? (s.events * 1000) / s.ms : 0)} events/s)`,
    `  range: ${Object.entries(r.starts)
      .map(([p, o]) => `${p}:${o}-${(r.ends[p] ?? 0) - 1}`)
      .join(', ')}${r.copiedRows > 0 ? `; ${n(r.copiedRows)} rows before it copied from the live table` : ''}`,
  ];
  if (s.rejected + s.undecodable + s.unsealedBatches > 0) {
    lines.push(
      `  skipped: ${s.rejected} batches that cannot be projected, ${s.undecodable} undecodable records, ${s.unsealedBatches} batches of uploads not sealed in the range`,
    );
  }
  if (r.verification) lines.push(formatVerification(r.verification));
  if (r.swap) lines.push(describeSwap(r.swap));
  else if (r.notSwapped) lines.push(`not swapped in: ${r.notSwapped}`);
  else if (r.generation !== null)
    lines.push(`not swapped in (swap it with: meridian replay swap ${r.generation}; drop it with: meridian replay drop ${r.generation})`);
  return lines.join('\n');
}

function describeSwap(s: SwapResult): string {
  return [
    `swapped in: ${LIVE_POINTS} is generation ${s.generation} now; generation ${s.retired} is kept as ${pointsTable(s.retired)} (drop it with: meridian replay drop ${s.retired})`,
    `  live writes held for ${(s.frozenMs / 1000).toFixed(2)} s${s.nudged ? '; the live projector was made to re-read its positions' : ''}; positions at the swap ${Object.entries(
      s.positions,
    )
      .map(([p, o]) => `${p}:${o}`)
      .join(',')}`,
  ].join('\n');
}

async function list(services: CliServices, args: readonly string[]): Promise<string> {
  const { values } = parseArgs({ args: [...args], options: { json: { type: 'boolean' } } });
  const generations = await listGenerations(services.clickhouse);
  if (values.json) return JSON.stringify(generations);
  return generations
    .map((g) => {
      const built = g.detail.built as { points?: number; ms?: number } | undefined;
      return [
        `g${g.generation}`.padEnd(5),
        g.state.padEnd(9),
        (g.table ?? '-').padEnd(16),
        `${g.rows === null ? '-' : n(g.rows)} rows`.padEnd(18),
        g.created_at ? `built ${new Date(g.created_at).toISOString()}` : String(g.detail.source ?? ''),
        g.detail.from || g.detail.to ? ` from ${String(g.detail.from ?? 'the beginning')} to ${String(g.detail.to ?? 'the end')}` : '',
        g.verified === null ? '' : g.verified ? ' verified' : ' VERIFICATION FAILED',
        built?.ms ? ` (${n(((built.points ?? 0) * 1000) / built.ms)} points/s)` : '',
      ]
        .join(' ')
        .trimEnd();
    })
    .join('\n');
}

async function verify(services: CliServices, args: readonly string[]): Promise<string> {
  const { values, positionals } = parseArgs({ args: [...args], allowPositionals: true, options: { json: { type: 'boolean' } } });
  const g = generationArg(positionals, 'verify');
  const partitions = [...(await services.log.offsets(services.topics.points)).end.keys()];
  const v = await verifyTables(services.clickhouse, { points: LIVE_POINTS, seals: LIVE_SEALS }, { points: pointsTable(g), seals: sealsTable(g) }, partitions);
  return values.json ? JSON.stringify(v) : formatVerification(v);
}

async function swap(services: CliServices, args: readonly string[], io: Io): Promise<string> {
  const { values, positionals } = parseArgs({ args: [...args], allowPositionals: true, options: { quiet: { type: 'boolean' } } });
  const g = generationArg(positionals, 'swap');
  const out = progressWriter(io, values.quiet === true);
  try {
    return describeSwap(await swapGeneration(services, g, { onProgress: (phase, p) => out.progress(phase, p), onPhase: (text) => out.phase(text) }));
  } finally {
    out.end();
  }
}

/** `meridian events export`: the page is streamed to --out (or stdout); the next cursor, if any, is printed on stderr. */
export async function runEventsExport(services: CliServices, args: readonly string[], io: Io = processIo): Promise<string> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      types: { type: 'string' },
      format: { type: 'string' },
      out: { type: 'string' },
      'max-events': { type: 'string' },
      cursor: { type: 'string' },
    },
  });
  const time = (text: string | undefined, which: 'start' | 'end') => {
    if (text === undefined) return null;
    const parsed = parseDateBound(text, which);
    if (!parsed.ok) throw new ReplayUsageError(`--${which === 'start' ? 'from' : 'to'}: ${parsed.reason}`);
    return parsed.ms;
  };
  const format = (values.format ?? 'avro') as ExportFormat;
  if (format !== 'avro' && format !== 'ndjson') throw new ReplayUsageError('--format must be avro or ndjson');
  const maxEvents = values['max-events'] === undefined ? Infinity : Number(values['max-events']);
  if (!(maxEvents === Infinity || (Number.isInteger(maxEvents) && maxEvents > 0))) throw new ReplayUsageError('--max-events must be a positive integer');
  const after = values.cursor === undefined ? null : decodeExportCursor(values.cursor);
  if (values.cursor !== undefined && after === null) throw new ReplayUsageError('--cursor is not one this command printed');
  const request = {
    fromMs: time(values.from, 'start'),
    toMs: time(values.to, 'end'),
    types:
      values.types === undefined
        ? null
        : values.types
            .split(',')
            .map((t) => t.trim())
            .filter(Boolean),
    format,
    maxEvents,
    after,
  };
  if (request.fromMs !== null && request.toMs !== null && request.fromMs > request.toMs) throw new ReplayUsageError('--from is after --to');
  const deps = { log: services.log, topics: services.topics, topicPrefix: services.topicPrefix };
  let plan;
  try {
    plan = await planExport(deps, request);
  } catch (error) {
    if (error instanceof ExportRequestError) throw new ReplayUsageError(`--${error.field}: ${error.message}`);
    throw error;
  }
  const body = streamExport(deps, plan, request);
  const toStdout = values.out === undefined || values.out === '-';
  const target: Writable = toStdout ? io.out : createWriteStream(values.out!);
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (!target.write(chunk)) await once(target, 'drain');
  }
  if (!toStdout) {
    target.end();
    await once(target, 'finish');
  }
  if (plan.next) io.err.write(`next cursor: ${encodeExportCursor(plan.next)}\n`);
  // Written to a file: a summary on stdout. Written to stdout: nothing more may follow the bytes.
  return toStdout
    ? ''
    : `exported ${n(bytes)} bytes of ${format} to ${values.out}${plan.next ? ` (more after this page: --cursor ${encodeExportCursor(plan.next)})` : ''}`;
}
