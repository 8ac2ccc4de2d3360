import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { crc64Avro } from './crc64-avro.ts';
import { canonicalForm, fingerprintOf } from './registry.ts';

// Published CRC-64-AVRO vectors (as signed 64-bit integers) of the Avro project's schema tests.
const vectors: Array<[string, bigint]> = [
  ['"null"', 7195948357588979594n],
  ['"boolean"', -6970731678124411036n],
  ['"int"', 8247732601305521295n],
  ['"long"', -3434872931120570953n],
  ['"string"', -8142146995180207161n],
  ['{"name":"x.y.foo","type":"record","fields":[]}', 5916914534497305771n],
];

describe('CRC-64-AVRO', () => {
  it.each(vectors)('fingerprints the canonical form of %s', (schema, expected) => {
    const type = avro.Type.forSchema(JSON.parse(schema));
    expect(BigInt.asIntN(64, crc64Avro(Buffer.from(canonicalForm(type))))).toBe(expected);
    expect(BigInt.asIntN(64, fingerprintOf(type))).toBe(expected);
  });

  it('ignores doc strings and whitespace, as the canonical form does', () => {
    const a = avro.Type.forSchema({ type: 'record', name: 'x.y.foo', doc: 'hello', fields: [] });
    expect(BigInt.asIntN(64, fingerprintOf(a))).toBe(5916914534497305771n);
  });
});
