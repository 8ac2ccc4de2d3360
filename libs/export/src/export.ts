import { randomBytes } from 'node:crypto';
import { PassThrough, pipeline, Readable } from 'node:stream';
import avro from 'avsc';
import { createEventCodec, parseHeader, SchemaRegistry, type EventCodec, type EventLike } from '@meridian/events';
import type { LogRanges, PartitionRange, RangeMessage } from '@meridian/domain';
import type { Topics } from '@meridian/kafka';
import { envelopeType, topicOfType, wrapEvent } from './export-schema.ts';

/**
 * Export of the raw event history: every event of a time range (Kafka record timestamps, i.e.
 * when each event was written), streamed from the log as an Avro object container file or as
 * NDJSON, page by page with a cursor like downloads.
 *
 * Order: topic by topic (accounts, tasks, files, points), partition by partition, offset by
 * offset: the log's own order within a partition, and the same bytes for the same range every
 * time. A page covers at most `maxEvents` offsets of the log (transaction markers, aborted
 * records, events of other types or outside the time range take offsets too, so a page can hold
 * fewer events); when the range goes on, the plan says where the next page starts.
 */
export const EXPORT_TOPICS = ['accounts', 'tasks', 'files', 'points'] as const;
export type ExportTopic = (typeof EXPORT_TOPICS)[number];
export type ExportFormat = 'avro' | 'ndjson';

export type ExportCursor = { readonly topic: ExportTopic; readonly partition: number; readonly offset: number };

export type ExportRequest = {
  /** Inclusive bounds on the record timestamp, epoch ms; null: from the beginning / to now. */
  readonly fromMs: number | null;
  readonly toMs: number | null;
  /** Event types (schema names) to export; null: all. */
  readonly types: readonly string[] | null;
  readonly format: ExportFormat;
  /** Most log offsets one page covers; Infinity for the whole range. */
  readonly maxEvents: number;
  readonly after: ExportCursor | null;
};

export type ExportDeps = {
  /** The log, read by ranges (consumer groups of the export's own). */
  readonly log: LogRanges;
  readonly topics: Topics;
  readonly topicPrefix: string;
  readonly registry?: SchemaRegistry;
};

export type ExportPlan = {
  readonly ranges: readonly (PartitionRange & { readonly short: ExportTopic })[];
  readonly types: readonly string[];
  /** Where the next page starts; null when this page ends the range. */
  readonly next: ExportCursor | null;
};

export class ExportRequestError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

const CURSOR_VERSION = 1;

let defaultRegistry: SchemaRegistry | null = null;
/** schemas/ read once per process (every version is kept there; files never change meaning). */
function registryOf(deps: ExportDeps): SchemaRegistry {
  return deps.registry ?? (defaultRegistry ??= SchemaRegistry.loadFromDirectory());
}

/**
 * The cursor's plain layout. The api seals it before handing it out (its cursor-seal.ts: log
 * offsets stay unreadable, and a cursor works only for the user and range it was issued to);
 * the CLI prints it plain to its operator, who reads the log directly anyway.
 */
export function encodeExportCursor(c: ExportCursor): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, c.topic, c.partition, c.offset]), 'utf8').toString('base64url');
}

export function decodeExportCursor(token: string): ExportCursor | null {
  if (token.length === 0 || token.length > 512 || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(fields) || fields.length !== 4 || fields[0] !== CURSOR_VERSION) return null;
  const [, topic, partition, offset] = fields as unknown[];
  if (!EXPORT_TOPICS.includes(topic as ExportTopic)) return null;
  if (!Number.isSafeInteger(partition) || (partition as number) < 0 || (partition as number) > 65535) return null;
  if (!Number.isSafeInteger(offset) || (offset as number) < 0) return null;
  return { topic: topic as ExportTopic, partition: partition as number, offset: offset as number };
}

/** Checks the requested types and finds the topics holding them (all four when a type's schema does not say). */
export function resolveTypes(registry: SchemaRegistry, types: readonly string[] | null): { types: string[]; topics: ExportTopic[] } {
  const known = registry.names();
  const wanted = types === null ? known : [...new Set(types)].sort();
  const unknown = wanted.filter((t) => !known.includes(t));
  if (unknown.length > 0) throw new ExportRequestError('types', `unknown event types: ${unknown.join(', ')} (known: ${known.join(', ')})`);
  if (wanted.length === 0) throw new ExportRequestError('types', 'no event types given');
  const topics = new Set<ExportTopic>();
  for (const t of wanted) {
    const topic = topicOfType(registry, t);
    if (topic === null || !EXPORT_TOPICS.includes(topic as ExportTopic)) return { types: wanted, topics: [...EXPORT_TOPICS] };
    topics.add(topic as ExportTopic);
  }
  return { types: wanted, topics: EXPORT_TOPICS.filter((t) => topics.has(t)) };
}

/** Cuts ranges (in export order) into one page of at most `maxEvents` offsets after `after` (pure). */
export function pageRanges<R extends PartitionRange & { short: ExportTopic }>(
  ranges: readonly R[],
  after: ExportCursor | null,
  maxEvents: number,
): { ranges: R[]; next: ExportCursor | null } {
  const order = (r: { short: ExportTopic; partition: number }) => EXPORT_TOPICS.indexOf(r.short) * 65536 + r.partition;
  const sorted = [...ranges].sort((a, b) => order(a) - order(b));
  const out: R[] = [];
  let budget = maxEvents;
  for (const r of sorted) {
    let start = r.start;
    if (after) {
      const here = order(r);
      const there = order({ short: after.topic, partition: after.partition });
      if (here < there) continue;
      if (here === there) start = Math.max(start, after.offset);
    }
    if (start >= r.end) continue;
    if (budget <= 0) return { ranges: out, next: { topic: r.short, partition: r.partition, offset: start } };
    const take = Math.min(r.end - start, budget);
    out.push({ ...r, start, end: start + take });
    budget -= take;
    if (start + take < r.end) return { ranges: out, next: { topic: r.short, partition: r.partition, offset: start + take } };
  }
  return { ranges: out, next: null };
}

/** Which offsets the page covers, and where the next one starts. */
export async function planExport(deps: ExportDeps, request: ExportRequest): Promise<ExportPlan> {
  const registry = registryOf(deps);
  const { types, topics } = resolveTypes(registry, request.types);
  const all: Array<PartitionRange & { short: ExportTopic }> = [];
  for (const short of topics) {
    const topic = deps.topics[short];
    const { log } = deps;
    const { low, end } = await log.offsets(topic);
    const first = request.fromMs === null ? low : await log.offsetsAtTime(topic, request.fromMs);
    const last = request.toMs === null ? end : await log.offsetsAtTime(topic, request.toMs + 1);
    for (const [partition, hi] of end) {
      const start = Math.max(first.get(partition) ?? low.get(partition)!, low.get(partition)!);
      const stop = Math.min(last.get(partition) ?? hi, hi);
      if (stop > start) all.push({ short, topic, partition, start, end: stop });
    }
  }
  const page = pageRanges(all, request.after, request.maxEvents);
  return { ranges: page.ranges, types, next: page.next };
}

/** One exported event, as the NDJSON line and the Avro record both describe it. */
export type LoggedEvent = {
  readonly topic: ExportTopic;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly key: string | null;
  readonly type: string;
  readonly schema_version: number;
  readonly event: Record<string, unknown>;
};

/** JSON for NDJSON: bytes and fixed as lowercase hex, the timestamp as ISO 8601. */
function jsonLine(e: LoggedEvent): string {
  return `${JSON.stringify({ ...e, timestamp: new Date(e.timestamp).toISOString() }, (_k, v: unknown) =>
    v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)
      ? Buffer.from((v as { data: number[] }).data).toString('hex')
      : v,
  )}\n`;
}

/**
 * Streams the page: events read from the log one partition after another, filtered by type and
 * by record timestamp, never more than a fetch's worth in memory. The consumer stops when the
 * stream is destroyed (the client went away) or `signal` aborts.
 */
export function streamExport(deps: ExportDeps, plan: ExportPlan, request: ExportRequest, signal?: AbortSignal): Readable {
  const registry = registryOf(deps);
  const codec: EventCodec<EventLike> = createEventCodec<EventLike>(registry);
  const wanted = new Set(plan.types);
  const abort = new AbortController();
  signal?.addEventListener('abort', () => abort.abort(signal.reason), { once: true });

  async function* events(): AsyncGenerator<LoggedEvent> {
    const groupId = `${deps.topicPrefix}export-${randomBytes(6).toString('hex')}`;
    for await (const batch of deps.log.readRanges(plan.ranges, { groupId, sequential: true, signal: abort.signal })) {
      const short = plan.ranges.find((r) => r.topic === batch.topic)!.short;
      for (const message of batch.messages) {
        const e = toLogged(short, batch.partition, message);
        if (e) yield e;
      }
    }
  }

  function toLogged(short: ExportTopic, partition: number, message: RangeMessage): LoggedEvent | null {
    const timestamp = Number(message.timestamp);
    if (request.fromMs !== null && timestamp < request.fromMs) return null;
    if (request.toMs !== null && timestamp > request.toMs) return null;
    const value = message.value ?? Buffer.alloc(0);
    const header = parseHeader(value);
    const writer = header ? registry.byPrint(header.fingerprint) : undefined;
    if (!writer || !wanted.has(writer.name)) return null; // not an event of ours (the dead-letter topic is not exported), or not asked for
    const { type, ...event } = codec.decode(value) as EventLike & Record<string, unknown>;
    return {
      topic: short,
      partition,
      offset: Number(message.offset),
      timestamp,
      key: message.key ? message.key.toString('utf8') : null,
      type,
      schema_version: writer.version,
      event,
    };
  }

  const source = Readable.from(events(), { objectMode: true });
  const stop = () => abort.abort(new Error('export stream closed'));
  let out: Readable;
  if (request.format === 'avro') {
    const type = envelopeType(registry, plan.types);
    const encoder = new avro.streams.BlockEncoder(type, { codec: 'deflate', blockSize: 256 * 1024 });
    out = pipeline(
      source,
      async function* (rows: AsyncIterable<LoggedEvent>) {
        for await (const e of rows) yield { ...e, event: wrapEvent(type, e.type, e.event) };
      },
      encoder,
      new PassThrough(),
      () => undefined,
    );
  } else {
    out = pipeline(
      source,
      async function* (rows: AsyncIterable<LoggedEvent>) {
        for await (const e of rows) yield jsonLine(e);
      },
      new PassThrough(),
      () => undefined,
    );
  }
  out.once('close', stop);
  return out;
}
