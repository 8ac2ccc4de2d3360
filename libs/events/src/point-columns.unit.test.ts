import { describe, expect, it } from 'vitest';
import { createEventCodec, UndecodableEventError } from './codec.ts';
import { packPointColumns, unpackPointColumns, type PointColumns } from './point-columns.ts';
import { SchemaRegistry } from './registry.ts';
import { encodeSingleObject, parseHeader } from './single-object.ts';

/** A double's 64 bits, so that NaN payloads and -0 compare exactly. */
const bitsOf = (values: readonly number[]) => values.map((v) => new BigUint64Array(Float64Array.of(v).buffer)[0]!);
const fromBits = (bits: bigint) => new Float64Array(BigUint64Array.of(bits).buffer)[0]!;
/** Prometheus' stale marker: a NaN with payload 2. */
const STALE = fromBits(0x7ff0000000000002n);

function roundTrip(c: PointColumns, series: number) {
  const back = unpackPointColumns(packPointColumns(c, series), series);
  expect(back.timestamps).toEqual(c.timestamps);
  expect(bitsOf(back.values)).toEqual(bitsOf(c.values));
  expect(back.nameIndex).toEqual(c.nameIndex);
  return back;
}

const T0 = 1_704_067_200_000;
const scrapes = (n: number, interval: number) => Array.from({ length: n }, (_, i) => T0 + i * interval + ((i * 7) % 11) - 5);

describe('point columns (PointBatch v5)', () => {
  it.each([
    ['two decimals', [21.37, 21.4, 0.01, -3.5, 100, 99.99]],
    ['integers and a counter', [0, 1, 2, 1_000_000_007, 1_000_500_000, 3]],
    ['NaN, the stale marker, ±Inf', [1.5, NaN, STALE, Infinity, -Infinity, 2]],
    ['-0 and 0', [-0, 0, -0, 1]],
    ['subnormals and extremes', [5e-324, 2.2250738585072014e-308, 1e300, -1e300, Number.MAX_VALUE, Number.MIN_SAFE_INTEGER]],
    ['full-precision doubles', [0.1 + 0.2, Math.PI, Math.E, 1 / 3, 0.123456789012345]],
    ['integers past the decimal range', [2 ** 51, 2 ** 53, -(2 ** 52), 1]],
  ])('brings back %s bit for bit', (_, values) => {
    roundTrip({ timestamps: values.map((_, i) => T0 + i * 1000), values, nameIndex: [] }, 1);
  });

  it('brings back a series that mixes exact decimals with one value that is not', () => {
    const values = [...Array.from({ length: 50 }, (_, i) => i / 100), 0.1 + 0.2];
    roundTrip({ timestamps: scrapes(values.length, 15_000), values, nameIndex: [] }, 1);
  });

  it('brings back timestamps out of order, duplicated, negative, and past 2^50 ms', () => {
    const values = [1, 2, 3, 4, 5, 6];
    roundTrip({ timestamps: [T0 + 30_000, T0, T0, T0 - 86_400_000, -5, T0 + 10], values, nameIndex: [] }, 1);
    roundTrip({ timestamps: [Number.MAX_SAFE_INTEGER, 0, Number.MIN_SAFE_INTEGER, 2 ** 50, -(2 ** 50), T0], values, nameIndex: [] }, 1);
  });

  it('keeps the order of points of several series, interleaved or in runs', () => {
    const n = 300;
    const timestamps = scrapes(n, 10_000);
    const values = timestamps.map((_, i) => (i % 4 === 0 ? i / 100 : i % 4 === 1 ? i * 1000 : i % 4 === 2 ? Math.sin(i) : NaN));
    roundTrip({ timestamps, values, nameIndex: timestamps.map((_, i) => i % 3) }, 3);
    roundTrip({ timestamps, values, nameIndex: timestamps.map((_, i) => Math.floor(i / 100)) }, 5);
  });

  it('packs scrapes of two decimals in a few bytes a point where Avro writes 11', () => {
    const timestamps = scrapes(1000, 15_000);
    const values = timestamps.map((_, i) => Math.round((50 + 10 * Math.sin(i / 20)) * 100) / 100);
    expect(packPointColumns({ timestamps, values, nameIndex: [] }, 1).length).toBeLessThan(3 * 1000);
  });

  it('refuses bytes it could not have written', () => {
    const good = packPointColumns({ timestamps: scrapes(20, 10_000), values: scrapes(20, 1), nameIndex: [] }, 1);
    expect(() => unpackPointColumns(good.subarray(0, good.length - 1), 1)).toThrow(/ends early/);
    expect(() => unpackPointColumns(Buffer.concat([good, Buffer.of(0)]), 1)).toThrow(/bytes after/);
    expect(() => unpackPointColumns(good, 2)).toThrow(/series/);
    expect(() => unpackPointColumns(Buffer.of(1, 0xff, 0xff, 0xff, 0x0f, 1), 1)).toThrow(/more points than bytes/);
    expect(() => unpackPointColumns(Buffer.of(9), 1)).toThrow(/layout/);
  });

  it('refuses columns of different lengths or a name index out of the names', () => {
    expect(() => packPointColumns({ timestamps: [1, 2], values: [1], nameIndex: [] }, 1)).toThrow(/lengths/);
    expect(() => packPointColumns({ timestamps: [1, 2], values: [1, 2], nameIndex: [0, 2] }, 2)).toThrow(/out of/);
  });

  it('refuses timestamps it could not give back: fractions and past 2^53', () => {
    expect(() => packPointColumns({ timestamps: [1.5, 2.7], values: [1, 2], nameIndex: [] }, 1)).toThrow(/safe integer/);
    expect(() => packPointColumns({ timestamps: [2 ** 60], values: [1], nameIndex: [] }, 1)).toThrow(/safe integer/);
  });
});

describe('PointBatch v5 through the event codec', () => {
  const registry = SchemaRegistry.loadFromDirectory();
  const codec = createEventCodec<{ type: string }>(registry);
  const versionOf = (bytes: Buffer) => registry.versionsOf('PointBatch').find((v) => v.fingerprint === parseHeader(bytes)!.fingerprint)!.version;
  const timestamps = scrapes(600, 10_000);
  const batch = {
    type: 'PointBatch',
    task_id: 't',
    metric_name: '',
    updated_at: T0,
    timestamps,
    // A walk of two decimals, a gauge that went stale now and then (raw), a counter.
    values: timestamps.map((_, i) => (i < 200 ? i / 100 : i < 400 ? (i % 2 === 0 ? i / 3 : STALE) : i * 1000)),
    names: ['a', 'b', 'c'],
    name_index: timestamps.map((_, i) => Math.floor(i / 200)),
  };
  const decoded = { ...batch, stage: null };

  it('writes v5 by default and reads back the columns as v4 gives them', () => {
    const bytes = codec.encode(batch);
    expect(versionOf(bytes)).toBe(5);
    const back = codec.decode(bytes) as typeof decoded;
    expect({ ...back, values: bitsOf(back.values) }).toEqual({ ...decoded, values: bitsOf(batch.values) });
    const v4 = createEventCodec<{ type: string }>(registry, { writePacked: false }).encode(batch);
    expect(versionOf(v4)).toBe(4);
    expect(bytes.length).toBeLessThan(v4.length * 0.6);
    expect(codec.decode(v4)).toEqual(codec.decode(bytes));
  });

  it('gives back the name index of a batch whose names hold one name, as v4 does', () => {
    const single = { ...batch, names: ['a'], name_index: timestamps.map(() => 0) };
    const v4 = createEventCodec<{ type: string }>(registry, { writePacked: false });
    expect(codec.decode(codec.encode(single))).toEqual(v4.decode(v4.encode(single)));
    expect((codec.decode(codec.encode(single)) as typeof single).name_index).toEqual(single.name_index);
  });

  it('writes one metric by its name alone, and an upgrade still writes v4 or v3 when told', () => {
    const one = { ...batch, metric_name: 'm', names: [], name_index: [] };
    expect(codec.decode(codec.encode(one))).toEqual({ ...one, stage: null });
    expect(versionOf(createEventCodec<{ type: string }>(registry, { writeDeltas: false, writePacked: false }).encode(one))).toBe(1);
  });

  it('says a batch whose columns are corrupt is undecodable', () => {
    const v5 = registry.latest('PointBatch')!;
    const fields = { ...decoded, timestamps: [], values: [], name_index: [], timestamps_delta: false };
    for (const columns of [Buffer.of(9), Buffer.of(1, 2, 3)]) {
      expect(() => codec.decode(encodeSingleObject(v5.fingerprint, v5.type, { ...fields, columns }))).toThrow(UndecodableEventError);
    }
  });
});
