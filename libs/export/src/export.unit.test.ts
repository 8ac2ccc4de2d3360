import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { SchemaRegistry } from '@meridian/events';
import { dedupeNamedTypes, envelopeSchema, envelopeType, topicOfType, wrapEvent } from './export-schema.ts';
import { decodeExportCursor, encodeExportCursor, EXPORT_TOPICS, pageRanges, resolveTypes, type ExportTopic } from './export.ts';

describe('the export', () => {
  const registry = SchemaRegistry.loadFromDirectory();

  it('has an Avro container schema for every event type at once, named types defined once', () => {
    const schema = envelopeSchema(registry, registry.names()) as { fields: Array<{ name: string; type: unknown }> };
    const text = JSON.stringify(schema);
    expect(text.match(/"name":"meridian\.Sha256"/g)).toHaveLength(1);
    const type = envelopeType(registry, registry.names());
    for (const name of registry.names()) {
      const value = registry.latest(name)!.type.random() as unknown as Record<string, unknown>;
      const record = { topic: 'tasks', partition: 1, offset: 2, timestamp: 3, key: null, type: name, schema_version: 1, event: wrapEvent(type, name, value) };
      expect(type.isValid(record), name).toBe(true);
      const back = type.fromBuffer(type.toBuffer(record)) as { event: Record<string, unknown> };
      expect(back.event[`meridian.${name}`], name).toEqual(value);
    }
    // One type alone: its union has one branch, not wrapped by any reader's default.
    const single = envelopeType(registry, ['UserCreated']);
    const user = registry.latest('UserCreated')!.type.random() as unknown as Record<string, unknown>;
    expect(wrapEvent(single, 'UserCreated', user)).toBe(user);
    expect(single.isValid({ topic: 'accounts', partition: 0, offset: 0, timestamp: 0, key: 'u', type: 'UserCreated', schema_version: 1, event: user })).toBe(
      true,
    );
  });

  it('refuses two different definitions of one named type', () => {
    const fixed = (size: number) => ({
      type: 'record',
      name: 'meridian.A',
      fields: [{ name: 'h', type: { type: 'fixed', name: 'Sha', namespace: 'meridian', size } }],
    });
    expect(dedupeNamedTypes([fixed(32), { ...fixed(32), name: 'meridian.B' }])[1]).toEqual({
      type: 'record',
      name: 'meridian.B',
      fields: [{ name: 'h', type: 'meridian.Sha' }],
    });
    expect(() => dedupeNamedTypes([fixed(32), { ...fixed(16), name: 'meridian.B' }])).toThrow(/two different definitions of meridian.Sha/);
    expect(() =>
      avro.Type.forSchema({
        type: 'record',
        name: 'meridian.X',
        fields: [{ name: 'u', type: dedupeNamedTypes([fixed(32), { ...fixed(32), name: 'meridian.B' }]) as avro.Schema }],
      }),
    ).not.toThrow();
  });

  it('knows the topic of every event type from its schema', () => {
    for (const name of registry.names()) expect(EXPORT_TOPICS, name).toContain(topicOfType(registry, name) as ExportTopic);
    expect(resolveTypes(registry, ['UserCreated', 'PointBatch'])).toEqual({ types: ['PointBatch', 'UserCreated'], topics: ['accounts', 'points'] });
    expect(resolveTypes(registry, null).topics).toEqual([...EXPORT_TOPICS].filter((t) => registry.names().some((n) => topicOfType(registry, n) === t)));
    expect(() => resolveTypes(registry, ['Nope'])).toThrow(/unknown event types: Nope/);
  });

  it('cuts pages of at most max offsets in log order, and continues after the cursor', () => {
    const ranges = [
      { short: 'points' as const, topic: 'p', partition: 0, start: 0, end: 3 },
      { short: 'tasks' as const, topic: 't', partition: 1, start: 5, end: 7 },
      { short: 'tasks' as const, topic: 't', partition: 0, start: 0, end: 2 },
    ];
    const first = pageRanges(ranges, null, 3);
    expect(first.ranges.map((r) => [r.topic, r.partition, r.start, r.end])).toEqual([
      ['t', 0, 0, 2],
      ['t', 1, 5, 6],
    ]);
    expect(first.next).toEqual({ topic: 'tasks', partition: 1, offset: 6 });
    const second = pageRanges(ranges, first.next, 3);
    expect(second.ranges.map((r) => [r.topic, r.partition, r.start, r.end])).toEqual([
      ['t', 1, 6, 7],
      ['p', 0, 0, 2],
    ]);
    const third = pageRanges(ranges, second.next, 3);
    expect(third).toEqual({ ranges: [{ ...ranges[0], start: 2, end: 3 }], next: null });
    expect(pageRanges(ranges, null, Infinity).next).toBeNull();
    // A page that ends exactly at a range's end points at the next range.
    expect(pageRanges(ranges, null, 2).next).toEqual({ topic: 'tasks', partition: 1, offset: 5 });
  });

  it('has opaque cursors that only this service reads', () => {
    const c = { topic: 'files' as const, partition: 3, offset: 1234 };
    expect(decodeExportCursor(encodeExportCursor(c))).toEqual(c);
    for (const bad of [
      '',
      'x!',
      Buffer.from('[1,"nope",0,0]').toString('base64url'),
      Buffer.from('[2,"files",0,0]').toString('base64url'),
      Buffer.from('[1,"files",-1,0]').toString('base64url'),
    ]) {
      expect(decodeExportCursor(bad), bad).toBeNull();
    }
  });
});
