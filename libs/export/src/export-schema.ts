import avro from 'avsc';
import type { SchemaRegistry } from '@meridian/events';

/**
 * The schema of an exported Avro object container file: one record per logged event, with
 * where it sits in the log and the event itself as a union of the event types exported.
 *
 * Each event is written in the NEWEST version of its type's schema (older versions are resolved
 * into it on reading, as replay does), so the union holds one branch per type and the file
 * needs no schema but its own; `schema_version` tells which version wrote the event originally.
 * Named types that several event schemas define alike (meridian.Sha256, meridian.Access,
 * meridian.RowError) are defined once in the union and referred to by name after that.
 */
export const ENVELOPE_NAME = 'meridian.export.LoggedEvent';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const NAMED = new Set(['record', 'enum', 'fixed', 'error']);

function fullName(schema: { [k: string]: Json }, namespace: string | undefined): string {
  const name = String(schema.name);
  if (name.includes('.')) return name;
  const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
  return ns ? `${ns}.${name}` : name;
}

/** Defines every named type once: a later definition that matches is replaced by its name; one that differs is an error. */
export function dedupeNamedTypes(schemas: readonly Json[]): Json[] {
  const defined = new Map<string, string>();
  const strip = (s: Json): Json => {
    if (Array.isArray(s)) return s.map(strip);
    if (s === null || typeof s !== 'object') return s;
    const { doc: _doc, ...rest } = s;
    return Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, strip(v)]));
  };
  const walk = (s: Json, namespace: string | undefined): Json => {
    if (Array.isArray(s)) return s.map((b) => walk(b, namespace));
    if (s === null || typeof s !== 'object') return s;
    if (typeof s.type === 'string' && NAMED.has(s.type) && typeof s.name === 'string') {
      const name = fullName(s, namespace);
      const shape = JSON.stringify(strip({ ...s, name, namespace: null }));
      const seen = defined.get(name);
      if (seen !== undefined) {
        if (seen !== shape) throw new Error(`two different definitions of ${name} in the exported schemas`);
        return name;
      }
      defined.set(name, shape);
      const ns = name.includes('.') ? name.slice(0, name.lastIndexOf('.')) : undefined;
      const out: { [k: string]: Json } = { ...s, name };
      delete out.namespace;
      if (Array.isArray(s.fields))
        out.fields = s.fields.map((f) => (f && typeof f === 'object' && !Array.isArray(f) ? { ...f, type: walk(f.type ?? null, ns) } : f));
      return out;
    }
    if (s.type === 'array') return { ...s, items: walk(s.items ?? null, namespace) };
    if (s.type === 'map') return { ...s, values: walk(s.values ?? null, namespace) };
    if (typeof s.type === 'object') return { ...s, type: walk(s.type, namespace) };
    return s;
  };
  return schemas.map((s) => walk(s, undefined));
}

/** The container's schema for these event types (sorted), as JSON. */
export function envelopeSchema(registry: SchemaRegistry, types: readonly string[]): Json {
  const names = [...new Set(types)].sort();
  if (names.length === 0) throw new Error('no event types to export');
  const branches = names.map((name) => {
    const latest = registry.latest(name);
    if (!latest) throw new Error(`unknown event type ${name}`);
    return latest.type.schema({ exportAttrs: true }) as unknown as Json;
  });
  return {
    type: 'record',
    name: ENVELOPE_NAME,
    doc: 'One event of the Meridian log, with its place in it. Kafka record timestamps are the times the events were written (ingestion time).',
    fields: [
      { name: 'topic', type: 'string' },
      { name: 'partition', type: 'int' },
      { name: 'offset', type: 'long' },
      { name: 'timestamp', type: { type: 'long', logicalType: 'timestamp-millis' }, doc: 'Kafka record timestamp, epoch ms' },
      { name: 'key', type: ['null', 'string'], default: null },
      { name: 'type', type: 'string', doc: 'the event type: the name of its schema in schemas/' },
      {
        name: 'schema_version',
        type: 'int',
        doc: 'the schemas/<type>/v<N>.avsc version that wrote the event; the event field holds it resolved into the newest version',
      },
      { name: 'event', type: dedupeNamedTypes(branches) },
    ],
  };
}

/**
 * The avsc type of the container's records. Unions are wrapped only where ambiguous, as any
 * reader's default: the event union of several record types is ({ "meridian.UserCreated": {...} }),
 * a union of one type and the events' own ["null", ...] fields are not.
 */
export function envelopeType(registry: SchemaRegistry, types: readonly string[]): avro.Type {
  return avro.Type.forSchema(envelopeSchema(registry, types) as avro.Schema);
}

/** The `event` field's value for an event of `type`, wrapped when the envelope's union is. */
export function wrapEvent(envelope: avro.Type, type: string, event: Record<string, unknown>): unknown {
  const union = (envelope as avro.types.RecordType).field('event').type;
  return union instanceof avro.types.WrappedUnionType ? { [`meridian.${type}`]: event } : event;
}

/** The topic a type is written to, from its schema's doc ("Topic points, ..."); null when the doc does not say. */
export function topicOfType(registry: SchemaRegistry, type: string): string | null {
  const doc = (registry.latest(type)?.type.schema({ exportAttrs: true }) as { doc?: unknown } | undefined)?.doc;
  const m = typeof doc === 'string' ? /\bTopic (\w[\w-]*)/.exec(doc) : null;
  return m ? m[1]! : null;
}
