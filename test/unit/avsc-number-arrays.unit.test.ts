import avro from 'avsc';
import { describe, expect, it } from 'vitest';

// The array writer patched by patches/avsc+5.7.9.patch: arrays of plain longs and doubles are
// written in the array's own loop instead of through each item type's _write. The bytes and the
// refusals must be avsc's own, item by item.
const record = avro.Type.forSchema({
  type: 'record',
  name: 'Columns',
  fields: [
    { name: 'longs', type: { type: 'array', items: 'long' } },
    { name: 'doubles', type: { type: 'array', items: 'double' } },
    { name: 'names', type: { type: 'array', items: 'string' } },
  ],
});
const long = avro.Type.forSchema('long');
const double = avro.Type.forSchema('double');
const string = avro.Type.forSchema('string');

/** An array as the Avro spec writes it, from avsc's encodings of each item: one block, then 0. */
function arrayBytes<T>(items: readonly T[], type: avro.Type): Buffer {
  const parts = items.length === 0 ? [] : [long.toBuffer(items.length), ...items.map((x) => type.toBuffer(x))];
  return Buffer.concat([...parts, long.toBuffer(0)]);
}

describe('avsc arrays of longs and doubles (patched)', () => {
  it("writes the bytes of avsc's item types, for every kind of number and for empty arrays", () => {
    const longs = [0, 1, -1, 63, 64, -65, 2 ** 31, -(2 ** 31) - 1, 1_704_067_200_000, 9_007_199_254_740_990, -(2 ** 52)];
    const doubles = [0, -0, 0.1, -1.25, 1e-300, 1.7976931348623157e308, Number.MIN_VALUE, 12, Number.POSITIVE_INFINITY];
    for (const value of [
      { longs, doubles, names: ['a', 'é'] },
      { longs: [], doubles: [], names: [] },
    ]) {
      const bytes = record.toBuffer(value);
      expect(bytes.equals(Buffer.concat([arrayBytes(value.longs, long), arrayBytes(value.doubles, double), arrayBytes(value.names, string)]))).toBe(true);
      expect({ ...(record.fromBuffer(bytes) as object) }).toEqual(value);
    }
  });

  it('refuses what avsc refuses: a long that is not a safe integer, a double that is not a number', () => {
    const ok = { longs: [1], doubles: [1], names: [] };
    for (const bad of [1.5, 2 ** 60, '1', null]) expect(() => record.toBuffer({ ...ok, longs: [1, bad] })).toThrow(/invalid "long"/);
    for (const bad of ['1', null, {}]) expect(() => record.toBuffer({ ...ok, doubles: [bad] })).toThrow(/invalid "double"/);
  });

  it("leaves arrays of a custom long type to that type's own writer", () => {
    // A long type of bigints (avsc's LongType.__with): not a plain LongType, so not the patch's loop.
    const bigints = avro.types.LongType.__with({
      fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
      toBuffer: (n: bigint) => {
        const buf = Buffer.alloc(8);
        buf.writeBigInt64LE(n);
        return buf;
      },
      fromJSON: BigInt,
      toJSON: Number,
      isValid: (n: unknown) => typeof n === 'bigint',
      compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
    });
    const array = avro.Type.forSchema({ type: 'array', items: 'long' }, { registry: { long: bigints } });
    const values = [1n, 2n ** 40n, -3n];
    expect(array.fromBuffer(array.toBuffer(values))).toEqual(values);
  });

  it('is the code that runs here', () => {
    expect(String((avro.types.ArrayType.prototype as unknown as { _write: unknown })._write)).toContain('Meridian patch');
  });
});
