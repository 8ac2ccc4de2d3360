import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { createEventCodec, fingerprintOf, SchemaRegistry, SCHEMAS_DIR, type SchemaVersion } from '@meridian/events';
import type { PointsFact } from '@meridian/domain';
import { fromFixtureJson, type EventFixture } from '../../../test/fixtures/events/fixture.ts';
import { Projection, type Segment } from '@meridian/projection';
import { encodePointsBlock } from '@meridian/clickhouse';

/**
 * Upcasting, proven on recorded bytes: test/fixtures/events holds one event encoded by every
 * schema version in schemas/ (node test/fixtures/events/record.ts records the missing ones).
 * Events written with any version must replay through the same code as new ones.
 */
const FIXTURES = new URL('../../../test/fixtures/events/', import.meta.url).pathname;
const registry = SchemaRegistry.loadFromDirectory();
const codec = createEventCodec<{ type: string }>(registry);

function fixtures(): EventFixture[] {
  return readdirSync(FIXTURES, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'next-schemas')
    .flatMap((d) =>
      readdirSync(join(FIXTURES, d.name))
        .filter((f) => /^v\d+\.json$/.test(f))
        .map((f) => JSON.parse(readFileSync(join(FIXTURES, d.name, f), 'utf8')) as EventFixture),
    );
}

describe('recorded events of every schema version', () => {
  const all = fixtures();

  it('exist for every version in schemas/, and only for those', () => {
    const versions = registry
      .names()
      .flatMap((n) => registry.versionsOf(n).map((v) => `${n} v${v.version}`))
      .sort();
    const recorded = all.map((f) => `${f.schema} v${f.version}`).sort();
    expect(recorded, 'missing fixtures: run node test/fixtures/events/record.ts').toEqual(versions);
  });

  it('were written by the schema file as it is now (a written schema version never changes)', () => {
    for (const f of all)
      expect(
        registry
          .versionsOf(f.schema)
          .find((v) => v.version === f.version)!
          .fingerprint.toString(16)
          .padStart(16, '0'),
        `${f.schema} v${f.version}`,
      ).toBe(f.fingerprint);
  });

  it('decode, whatever version wrote them, into the newest version as recorded', () => {
    for (const f of all) {
      const newest = registry.latest(f.schema)!.version;
      const expected = f.decoded_by[String(newest)];
      expect(expected, `${f.schema} v${f.version}: no decoding by v${newest} recorded (run node test/fixtures/events/record.ts and review)`).toBeDefined();
      const { type, ...decoded } = codec.decode(Buffer.from(f.bytes, 'base64')) as Record<string, unknown>;
      expect(type).toBe(f.schema);
      expect(decoded, `${f.schema} v${f.version}`).toEqual(fromFixtureJson(expected));
    }
  });

  it('of the newest versions are exactly the bytes the codec writes today, from the event they decode to', () => {
    for (const f of all.filter((x) => registry.latest(x.schema)!.version === x.version)) {
      // The decoded event, not the written value: a version may write some fields in another form (codec.ts, arrays as differences).
      const bytes = codec.encode({ type: f.schema, ...(fromFixtureJson(f.decoded_by[String(f.version)]!) as object) });
      expect(bytes.toString('base64'), `${f.schema} v${f.version}`).toBe(f.bytes);
    }
  });
});

/**
 * A newer version of PointBatch that exists only in the test fixtures (next-schemas/): with it
 * as the newest, the recorded v1 to v5 bytes are older versions, and must still project to
 * the rows they always did. The live schemas are not touched.
 */
describe('an older PointBatch replays through the same projection as a newer one', () => {
  const next = JSON.parse(readFileSync(join(FIXTURES, 'next-schemas/PointBatch/v6.avsc'), 'utf8')) as avro.Schema;
  const v6type = avro.Type.forSchema(next);
  const v6: SchemaVersion = { name: 'PointBatch', version: 6, type: v6type, fingerprint: fingerprintOf(v6type) };
  const withNext = new SchemaRegistry([...registry.names().flatMap((n) => registry.versionsOf(n)), v6]);
  const nextCodec = createEventCodec<PointsFact>(withNext);
  const [v1, v2, v3, v4, v5] = [1, 2, 3, 4, 5].map((v) => JSON.parse(readFileSync(join(FIXTURES, `PointBatch/v${v}.json`), 'utf8')) as EventFixture) as [
    EventFixture,
    EventFixture,
    EventFixture,
    EventFixture,
    EventFixture,
  ];

  it("the v1 to v5 bytes decode into v6 with the new fields at their defaults, v4's timestamps from their differences, v5's columns unpacked", () => {
    expect(existsSync(join(SCHEMAS_DIR, 'PointBatch/v6.avsc')), 'this test assumes the live PointBatch is v5').toBe(false);
    expect(nextCodec.decode(Buffer.from(v1.bytes, 'base64'))).toEqual({
      type: 'PointBatch',
      ...(fromFixtureJson(v1.value) as object),
      stage: null,
      names: [],
      name_index: [],
      source_row: null,
    });
    expect(nextCodec.decode(Buffer.from(v2.bytes, 'base64'))).toEqual({
      type: 'PointBatch',
      ...(fromFixtureJson(v2.value) as object),
      names: [],
      name_index: [],
      source_row: null,
    });
    expect(nextCodec.decode(Buffer.from(v3.bytes, 'base64'))).toEqual({ type: 'PointBatch', ...(fromFixtureJson(v3.value) as object), source_row: null });
    const { timestamps_delta: _flag, ...v4value } = fromFixtureJson(v4.value) as { timestamps: number[]; timestamps_delta: boolean };
    expect(nextCodec.decode(Buffer.from(v4.bytes, 'base64'))).toEqual({
      type: 'PointBatch',
      ...v4value,
      timestamps: [1_704_067_204_000, 1_704_067_205_000],
      source_row: null,
    });
    expect(v4value.timestamps).toEqual([1_704_067_204_000, 1000]);
    // v5's sample holds its points packed in `columns`; decoded, they are the columns v4 gives.
    const { timestamps_delta: _f5, columns, ...v5value } = fromFixtureJson(v5.value) as { columns: Buffer; timestamps: number[]; timestamps_delta: boolean };
    expect(columns.length).toBeGreaterThan(0);
    expect(v5value.timestamps).toEqual([]);
    expect(nextCodec.decode(Buffer.from(v5.bytes, 'base64'))).toEqual({
      type: 'PointBatch',
      ...(fromFixtureJson(v5.decoded_by['5']!) as object),
      source_row: null,
    });
    expect(nextCodec.decode(Buffer.from(v5.bytes, 'base64'))).toMatchObject({ timestamps: [1_704_067_204_000, 1_704_067_205_000] });
  });

  it("v1 and v6 events become the same rows through the projector's decisions and Native encoding", () => {
    const fromV1 = nextCodec.decode(Buffer.from(v1.bytes, 'base64'));
    const fromV3 = nextCodec.decode(nextCodec.encode({ ...(fromV1 as object), source_row: 17 } as unknown as PointsFact));
    const rows = (fact: PointsFact, offset: number) => {
      const p = new Projection(100);
      p.setSinkMax(0, -1);
      const d = p.decide(0, offset, fact);
      expect(d.kind).toBe('buffer');
      return encodePointsBlock([(d as { segment: Segment }).segment]);
    };
    expect(rows(fromV1, 5)).toEqual(rows(fromV3, 5));
  });
});
