import type avro from 'avsc';
import { packingsOf, type Packing } from './packings.ts';
import { SchemaRegistry, type SchemaVersion } from './registry.ts';
import { encodeSingleObject, parseHeader } from './single-object.ts';

/** An event as the domain sees it: a plain object tagged with its schema's short name. */
export type EventLike = { readonly type: string };

/** A message that cannot be decoded: not single-object encoded, unknown schema, or corrupt body. */
export class UndecodableEventError extends Error {
  readonly retriable = false;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UndecodableEventError';
  }
}

export interface EventCodec<E extends EventLike> {
  encode(event: E): Buffer;
  decode(message: Buffer): E;
}

/**
 * A version an event of its type may be written with: the newest one, or an older one whose
 * fields are all the newest's (same name, same type), with the newest's other fields listed:
 * an event whose every one of those is unset or at its default loses nothing in that version.
 */
type Writer = { readonly schema: SchemaVersion; readonly absent: ReadonlyArray<{ readonly name: string; readonly isDefault: (value: unknown) => boolean }> };

type RecordSchema = { readonly fields: ReadonlyArray<{ readonly name: string; readonly type: unknown; readonly default?: unknown }> };

function writersOf(registry: SchemaRegistry, name: string): Writer[] {
  const latest = registry.latest(name);
  if (!latest) return [];
  const latestFields = (latest.type.schema({ exportAttrs: true }) as RecordSchema).fields;
  const writers: Writer[] = [];
  for (const schema of registry.versionsOf(name)) {
    if (schema === latest) break;
    const fields = (schema.type.schema({ exportAttrs: true }) as RecordSchema).fields;
    const same = fields.every((f) => {
      const match = latestFields.find((l) => l.name === f.name);
      return match !== undefined && JSON.stringify(match.type) === JSON.stringify(f.type);
    });
    const absent = latestFields.filter((l) => !fields.some((f) => f.name === l.name));
    if (!same || absent.some((l) => !('default' in l))) continue;
    writers.push({ schema, absent: absent.map((l) => ({ name: l.name, isDefault: defaultTest(l.default) })) });
  }
  writers.push({ schema: latest, absent: [] });
  return writers;
}

/** Whether a value is a field's default (unset counts as the default: the encoder would write it). */
function defaultTest(fallback: unknown): (value: unknown) => boolean {
  if (fallback === null || typeof fallback !== 'object') return (value) => value === undefined || value === fallback;
  // An empty list by its length: a point batch's names and name index are checked at every encode,
  // and writing them as JSON to compare cost more than encoding them.
  if (Array.isArray(fallback) && fallback.length === 0) return (value) => value === undefined || (Array.isArray(value) && value.length === 0);
  const json = JSON.stringify(fallback);
  return (value) => value === undefined || JSON.stringify(value) === json;
}

/**
 * Arrays of longs a schema writes as differences: a boolean field `<name>_delta` beside an array
 * of longs `<name>` says that, when true, the array holds its first value and then each value's
 * difference from the one before. Timestamps of a scrape series then take 2-3 bytes a point in
 * Avro's varints instead of 6, and their jittered intervals repeat, which the log's compression
 * finds. The codec alone knows: it writes the differences whenever the newest version has the
 * flag, and a decoded event holds the values themselves, without the flag, whatever wrote it.
 */
type DeltaField = { readonly values: string; readonly flag: string };

function deltaFieldsOf(schema: SchemaVersion): DeltaField[] {
  const fields = (schema.type.schema() as RecordSchema).fields;
  return fields.flatMap((f) => {
    const values = f.name.endsWith('_delta') ? f.name.slice(0, -'_delta'.length) : null;
    const array = values === null || f.type !== 'boolean' ? undefined : fields.find((a) => a.name === values);
    return array !== undefined && JSON.stringify(array.type) === JSON.stringify({ type: 'array', items: 'long' }) ? [{ values: array.name, flag: f.name }] : [];
  });
}

function toDeltas(values: readonly number[]): number[] {
  const out = new Array<number>(values.length);
  let last = 0;
  for (let i = 0; i < values.length; i++) {
    out[i] = values[i]! - last;
    last = values[i]!;
  }
  return out;
}

/** In place: the array is the decoder's own. */
function fromDeltas(values: number[]): void {
  for (let i = 1; i < values.length; i++) values[i] = values[i]! + values[i - 1]!;
}

export type CodecOptions = {
  /**
   * Whether arrays a newest version can write as differences are written so (true by default).
   * False writes them with the version before (with every other field it carries whole), which
   * a release that predates that version still reads: for a rolling upgrade from one.
   */
  readonly writeDeltas?: boolean;
  /**
   * Whether fields a newest version can pack (packings.ts: a point batch's points by series,
   * PointBatch v5) are written packed (true by default). False writes the version before, as
   * `writeDeltas` says: for a rolling upgrade from a release that predates the packed version.
   */
  readonly writePacked?: boolean;
};

/**
 * Value ↔ bytes for events. Encoding writes the OLDEST schema version that carries the event
 * whole (the newest fields it lacks are at their defaults in this event), so that during a
 * rolling upgrade, or after a rollback, a process that knows only the older versions still
 * reads every event that does not use what is new; an event that does use it is written with
 * the newest. Decoding reads the writer fingerprint and resolves that version into the newest
 * one, so old events replay through the same code as new ones.
 */
export function createEventCodec<E extends EventLike>(
  registry: SchemaRegistry = SchemaRegistry.loadFromDirectory(),
  options: CodecOptions = {},
): EventCodec<E> {
  const writeDeltas = options.writeDeltas ?? true;
  const writePacked = options.writePacked ?? true;
  const resolvers = new Map<bigint, { reader: SchemaVersion; resolver: avro.Resolver | null; deltas: DeltaField[]; packings: Packing[] }>();
  const writers = new Map<string, { candidates: Writer[]; deltas: DeltaField[]; packings: Packing[] }>();

  function readerFor(writer: SchemaVersion) {
    let entry = resolvers.get(writer.fingerprint);
    if (!entry) {
      const reader = registry.latest(writer.name)!;
      entry = {
        reader,
        resolver: reader === writer ? null : reader.type.createResolver(writer.type),
        deltas: deltaFieldsOf(reader),
        packings: packingsOf(reader.type.schema() as RecordSchema),
      };
      resolvers.set(writer.fingerprint, entry);
    }
    return entry;
  }

  return {
    encode(event) {
      let entry = writers.get(event.type);
      if (!entry) {
        const latest = registry.latest(event.type);
        entry = {
          candidates: writersOf(registry, event.type),
          deltas: latest === undefined || !writeDeltas ? [] : deltaFieldsOf(latest),
          packings: latest === undefined || !writePacked ? [] : packingsOf(latest.type.schema() as RecordSchema),
        };
        writers.set(event.type, entry);
      }
      const { candidates, deltas, packings } = entry;
      if (candidates.length === 0) throw new Error(`no schema for event type ${event.type}`);
      const { type: _type, ...fields }: Record<string, unknown> = event;
      for (const p of packings) p.pack(fields);
      // Packed arrays are empty: nothing left to write as differences.
      if (packings.length === 0)
        for (const d of deltas) {
          fields[d.values] = toDeltas(fields[d.values] as number[]);
          fields[d.flag] = true;
        }
      const { schema } = candidates.find((w) => w.absent.every((f) => f.isDefault(fields[f.name])))!;
      return encodeSingleObject(schema.fingerprint, schema.type, fields);
    },
    decode(message) {
      const parsed = parseHeader(message);
      if (!parsed) throw new UndecodableEventError('message is not Avro single-object encoded');
      const writer = registry.byPrint(parsed.fingerprint);
      if (!writer) throw new UndecodableEventError(`unknown schema fingerprint ${parsed.fingerprint.toString(16)}`);
      const { reader, resolver, deltas, packings } = readerFor(writer);
      let record: Record<string, unknown>;
      try {
        record = (resolver ? reader.type.fromBuffer(parsed.body, resolver) : reader.type.fromBuffer(parsed.body)) as Record<string, unknown>;
      } catch (cause) {
        throw new UndecodableEventError(`corrupt ${writer.name} v${writer.version} body`, { cause });
      }
      for (const d of deltas) {
        if (record[d.flag] === true) fromDeltas(record[d.values] as number[]);
        delete record[d.flag];
      }
      try {
        for (const p of packings) p.unpack(record);
      } catch (cause) {
        throw new UndecodableEventError(`corrupt ${writer.name} v${writer.version} ${packings.map((p) => p.field).join(', ')}`, { cause });
      }
      return { type: writer.name, ...record } as E;
    },
  };
}
