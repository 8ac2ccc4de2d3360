import type avro from 'avsc';
import { SchemaRegistry, type SchemaVersion } from './registry.ts';
import { parseHeader, writeHeader } from './single-object.ts';

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
 * Value ↔ bytes for events. Encoding uses the newest schema version of the event's type;
 * decoding reads the writer fingerprint and resolves that version into the newest one,
 * so old events replay through the same code as new ones.
 */
export function createEventCodec<E extends EventLike>(registry: SchemaRegistry = SchemaRegistry.loadFromDirectory()): EventCodec<E> {
  const resolvers = new Map<bigint, { reader: SchemaVersion; resolver: avro.Resolver | null }>();

  function readerFor(writer: SchemaVersion) {
    let entry = resolvers.get(writer.fingerprint);
    if (!entry) {
      const reader = registry.latest(writer.name)!;
      entry = { reader, resolver: reader === writer ? null : reader.type.createResolver(writer.type) };
      resolvers.set(writer.fingerprint, entry);
    }
    return entry;
  }

  return {
    encode(event) {
      const schema = registry.latest(event.type);
      if (!schema) throw new Error(`no schema for event type ${event.type}`);
      const { type: _type, ...fields } = event as E & Record<string, unknown>;
      return writeHeader(schema.fingerprint, schema.type.toBuffer(fields));
    },
    decode(message) {
      const parsed = parseHeader(message);
      if (!parsed) throw new UndecodableEventError('message is not Avro single-object encoded');
      const writer = registry.byPrint(parsed.fingerprint);
      if (!writer) throw new UndecodableEventError(`unknown schema fingerprint ${parsed.fingerprint.toString(16)}`);
      const { reader, resolver } = readerFor(writer);
      try {
        const record = resolver ? reader.type.fromBuffer(parsed.body, resolver) : reader.type.fromBuffer(parsed.body);
        return { type: writer.name, ...(record as object) } as E;
      } catch (cause) {
        throw new UndecodableEventError(`corrupt ${writer.name} v${writer.version} body`, { cause });
      }
    },
  };
}
