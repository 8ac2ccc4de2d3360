import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { createEventCodec, UndecodableEventError } from './codec.ts';
import { fingerprintOf, SchemaRegistry, type SchemaVersion } from './registry.ts';
import { encodeSingleObject, HEADER_LENGTH, parseHeader, writeHeader } from './single-object.ts';

function version(name: string, v: number, fields: avro.schema.RecordType['fields']): SchemaVersion {
  const type = avro.Type.forSchema({ type: 'record', name: `meridian.${name}`, fields });
  return { name, version: v, type, fingerprint: fingerprintOf(type) };
}

const v1 = version('Thing', 1, [{ name: 'id', type: 'string' }]);
const v2 = version('Thing', 2, [
  { name: 'id', type: 'string' },
  { name: 'size', type: 'long', default: 0 },
]);

describe('event codec', () => {
  it('writes single-object encoding with the newest schema fingerprint', () => {
    const codec = createEventCodec<{ type: 'Thing'; id: string; size: number }>(new SchemaRegistry([v1, v2]));
    const bytes = codec.encode({ type: 'Thing', id: 'a', size: 7 });
    expect([...bytes.subarray(0, 2)]).toEqual([0xc3, 0x01]);
    expect(parseHeader(bytes)?.fingerprint).toBe(v2.fingerprint);
    expect(codec.decode(bytes)).toEqual({ type: 'Thing', id: 'a', size: 7 });
  });

  it('writes each event once into a reused buffer, byte for byte what avsc writes, and hands out copies', () => {
    const batch = version('Series', 1, [
      { name: 'id', type: 'string' },
      { name: 'ts', type: { type: 'array', items: 'long' } },
    ]);
    const codec = createEventCodec<{ type: 'Series'; id: string; ts: number[] }>(new SchemaRegistry([batch]));
    // Small, past the first scratch (64 KiB), past what is kept (4 MiB), then small again.
    const sizes = [3, 20_000, 800_000, 10];
    const written = sizes.map((n, i) => {
      const event = { type: 'Series' as const, id: `s${i}`, ts: Array.from({ length: n }, (_, k) => 1_700_000_000_000 + k * 1000) };
      const bytes = codec.encode(event);
      expect(bytes.equals(writeHeader(batch.fingerprint, batch.type.toBuffer({ id: event.id, ts: event.ts })))).toBe(true);
      return { event, bytes };
    });
    // Later writes did not overwrite what earlier ones returned.
    for (const { event, bytes } of written) expect(codec.decode(bytes)).toEqual(event);
  });

  it('writes the oldest version that carries the event whole, so readers of only that version still read it', () => {
    const codec = createEventCodec<{ type: 'Thing'; id: string; size?: number }>(new SchemaRegistry([v1, v2]));
    const oldReader = createEventCodec<{ type: 'Thing'; id: string }>(new SchemaRegistry([v1]));
    for (const event of [
      { type: 'Thing' as const, id: 'a', size: 0 },
      { type: 'Thing' as const, id: 'b' },
    ]) {
      const bytes = codec.encode(event);
      expect(parseHeader(bytes)?.fingerprint).toBe(v1.fingerprint);
      expect(codec.decode(bytes)).toEqual({ type: 'Thing', id: event.id, size: 0 });
      expect(oldReader.decode(bytes)).toEqual({ type: 'Thing', id: event.id });
    }
  });

  it('uses the newest version for an event that needs it, by a union field left at null or set', () => {
    const n1 = version('Batch', 1, [{ name: 'id', type: 'string' }]);
    const n2 = version('Batch', 2, [
      { name: 'id', type: 'string' },
      { name: 'stage', type: ['null', 'string'], default: null },
    ]);
    const codec = createEventCodec<{ type: 'Batch'; id: string; stage: string | null }>(new SchemaRegistry([n1, n2]));
    expect(parseHeader(codec.encode({ type: 'Batch', id: 'a', stage: null }))?.fingerprint).toBe(n1.fingerprint);
    const staged = codec.encode({ type: 'Batch', id: 'a', stage: 'x' });
    expect(parseHeader(staged)?.fingerprint).toBe(n2.fingerprint);
    expect(codec.decode(staged)).toEqual({ type: 'Batch', id: 'a', stage: 'x' });
  });

  it('never writes an older version whose fields differ from the newest ones', () => {
    const o1 = version('Odd', 1, [{ name: 'id', type: 'int' }]);
    const o2 = version('Odd', 2, [{ name: 'id', type: 'long' }]);
    const o3 = version('Odd', 3, [
      { name: 'id', type: 'long' },
      { name: 'note', type: 'string' },
    ]);
    const changed = createEventCodec<{ type: 'Odd'; id: number }>(new SchemaRegistry([o1, o2]));
    expect(parseHeader(changed.encode({ type: 'Odd', id: 1 }))?.fingerprint).toBe(o2.fingerprint);
    // A field added without a default: no older reader could stand in for it.
    const required = createEventCodec<{ type: 'Odd'; id: number; note: string }>(new SchemaRegistry([o2, o3]));
    expect(parseHeader(required.encode({ type: 'Odd', id: 1, note: '' }))?.fingerprint).toBe(o3.fingerprint);
  });

  it('reads an event written with an older version into the newest shape', () => {
    const oldWriter = createEventCodec<{ type: 'Thing'; id: string }>(new SchemaRegistry([v1]));
    const reader = createEventCodec<{ type: 'Thing'; id: string; size: number }>(new SchemaRegistry([v1, v2]));
    expect(reader.decode(oldWriter.encode({ type: 'Thing', id: 'old' }))).toEqual({ type: 'Thing', id: 'old', size: 0 });
  });

  it('rejects bytes that are not single-object encoded, unknown fingerprints and corrupt bodies', () => {
    const codec = createEventCodec<{ type: 'Thing'; id: string }>(new SchemaRegistry([v1]));
    expect(() => codec.decode(Buffer.from('{"json":true}'))).toThrow(UndecodableEventError);
    const unknown = Buffer.from(codec.encode({ type: 'Thing', id: 'x' }));
    unknown.writeBigUInt64LE(42n, 2);
    expect(() => codec.decode(unknown)).toThrow(/unknown schema fingerprint/);
    const corrupt = codec.encode({ type: 'Thing', id: 'x' }).subarray(0, HEADER_LENGTH + 1);
    expect(() => codec.decode(corrupt)).toThrow(UndecodableEventError);
  });
});

describe('schemas/ directory', () => {
  const registry = SchemaRegistry.loadFromDirectory();

  it('holds schemas, each named meridian.<folder>', () => {
    expect(registry.names().length).toBeGreaterThan(0);
  });

  it('every version of every schema is read by the newest version of that schema', () => {
    for (const name of registry.names()) {
      const latest = registry.latest(name)!;
      for (const older of registry.versionsOf(name)) {
        const sample = older.type.random();
        const resolved = latest.type.fromBuffer(older.type.toBuffer(sample), latest.type.createResolver(older.type));
        expect(resolved, `${name} v${older.version} → v${latest.version}`).toBeTruthy();
      }
    }
  });

  it('round-trips a random value of every newest schema through the codec', () => {
    const codec = createEventCodec<{ type: string }>(registry);
    for (const name of registry.names()) {
      const random = registry.latest(name)!.type.random() as unknown as Record<string, unknown>;
      // A `<name>_delta` flag is the codec's to set: an event never carries it.
      const value = Object.fromEntries(Object.entries(random).filter(([k, v]) => !(k.endsWith('_delta') && typeof v === 'boolean')));
      // A point batch's `columns` are the codec's to pack too, from columns of one length.
      if (name === 'PointBatch') {
        delete value.columns;
        Object.assign(value, { names: [], name_index: [], values: (value.timestamps as number[]).map((_, i) => i / 4) });
      }
      const decoded = codec.decode(codec.encode({ type: name, ...value }));
      expect(decoded).toEqual({ type: name, ...value });
    }
  });
});

describe('arrays of longs written as differences', () => {
  const registry = SchemaRegistry.loadFromDirectory();
  const codec = createEventCodec<{ type: string }>(registry, { writePacked: false });
  const scrapes = Array.from({ length: 1000 }, (_, i) => 1_704_067_200_000 + i * 15_000 + ((i * 7) % 11) - 5);
  const batch = {
    type: 'PointBatch',
    task_id: 't',
    metric_name: 'm',
    updated_at: 1_704_067_200_000,
    timestamps: scrapes,
    values: scrapes.map((_, i) => i / 3),
  };

  it("writes a PointBatch's timestamps as differences with the newest version, and reads back the timestamps themselves", () => {
    const bytes = codec.encode(batch);
    const v4 = registry.versionsOf('PointBatch').find((v) => v.version === 4)!;
    expect(parseHeader(bytes)!.fingerprint).toBe(v4.fingerprint);
    expect(codec.decode(bytes)).toEqual({ ...batch, stage: null, names: [], name_index: [] });
    // 3 bytes a timestamp where v3 writes 6.
    const v3 = registry.versionsOf('PointBatch').find((v) => v.version === 3)!;
    const absolute = encodeSingleObject(v3.fingerprint, v3.type, { ...batch, stage: null, names: [], name_index: [] });
    expect(absolute.length - bytes.length).toBeGreaterThan(2900);
    expect(codec.decode(absolute)).toEqual(codec.decode(bytes));
  });

  it('writes them as they are with the version before when told to (a rolling upgrade from a release without v4)', () => {
    const bytes = createEventCodec<{ type: string }>(registry, { writeDeltas: false, writePacked: false }).encode(batch);
    // The oldest that carries it whole: v1, as before v4.
    expect(parseHeader(bytes)!.fingerprint).toBe(registry.versionsOf('PointBatch').find((v) => v.version === 1)!.fingerprint);
    expect(codec.decode(bytes)).toEqual(codec.decode(codec.encode(batch)));
  });

  it('does not change the event it encodes', () => {
    const copy = structuredClone(batch);
    codec.encode(batch);
    expect(batch).toEqual(copy);
  });
});
