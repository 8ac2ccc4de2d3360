import { describe, expect, it } from 'vitest';
import { PointBatcher, type PointsFact, type UserRecord } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import type { DecodedPush } from '@meridian/protocols';
import { decideSeriesPush, MAX_LISTED_SERIES } from './series-push.ts';

const codec = createEventCodec<PointsFact>();
const user: UserRecord = {
  user_name: 'u',
  is_admin: false,
  created_at: 0,
  disabled_at: null,
  key_ids: [],
  entitlements: [{ match: 'prefix', value: 'ok_', access: 'rw' }],
  file_quota_bytes: null,
};
const partitionOf = (name: string, partitions: number) => name.length % partitions;

function push(lengths: readonly number[]): DecodedPush {
  const series = lengths.map((n, s) => ({
    name: s % 5 === 4 ? `no_${s}` : `ok_${'x'.repeat(s)}`,
    metric: 'm',
    labels: [],
    timestamps: Array.from({ length: n }, (_, i) => 1_000 * (s + 1) + i),
    values: Array.from({ length: n }, (_, i) => s + i / 10),
  }));
  return { series, rejected: [], rejectedPoints: 0, samples: 0, dropped: { staleMarkers: 0, stringFields: 0 } };
}

describe('decideSeriesPush', () => {
  it('names the first MAX_LISTED_SERIES written series in the task, sorted, however many the push wrote', () => {
    const decoded = push(Array.from({ length: 60 }, () => 1));
    const { decision } = decideSeriesPush(decoded, user, {
      taskId: 't',
      at: 5,
      batch: { points: 100, bytes: 921_600 },
      pointsPartitions: 3,
      partitionOf,
      codec,
    });
    const written = decoded.series.map((s) => s.name).filter((n) => n.startsWith('ok_'));
    expect(written.length).toBeGreaterThan(MAX_LISTED_SERIES);
    expect(decision.metrics).toEqual([...written].sort().slice(0, MAX_LISTED_SERIES));
    expect(decision.points_accepted).toBe(written.length);
  });

  it('batches whole series as PointBatcher batches their points one at a time, per partition and within the batch size', () => {
    const decoded = push([3, 7, 1, 12, 5, 2, 9, 4, 4, 15, 1, 6]);
    const { decision, refusedPoints } = decideSeriesPush(decoded, user, {
      taskId: 't',
      at: 5,
      batch: { points: 5, bytes: 921_600 },
      pointsPartitions: 3,
      partitionOf,
      codec,
    });
    const batcher = new PointBatcher({ points: 5, bytes: 921_600 }, Number.MAX_SAFE_INTEGER, (name) => partitionOf(name, 3));
    const expected = [];
    for (const s of decoded.series.filter((x) => x.name.startsWith('ok_')))
      for (let i = 0; i < s.timestamps.length; i++) expected.push(...batcher.add(s.name, s.timestamps[i]!, s.values[i]!));
    expected.push(...batcher.drain());
    const got = decision.batches.map((b) => codec.decode(Buffer.from(b.value)));
    expect(got).toEqual(expected.map((b) => codec.decode(codec.encode(batchEvent(b)))));
    expect(decision.batches.map((b) => b.points)).toEqual(expected.map((b) => b.timestamps.length));
    expect(refusedPoints).toBe(5 + 15);
    expect(decision.points_accepted).toBe(69 - 20);
  });
});

describe('decideSeriesPush within a byte budget', () => {
  it('cuts batches of long-named series as PointBatcher does, each encoded within the budget', () => {
    const BYTES = 65_536;
    const series = Array.from({ length: 900 }, (_, s) => ({
      name: `ok_${String(s).padStart(240, 'l')}`,
      metric: 'm',
      labels: [],
      timestamps: Array.from({ length: 1 + (s % 7) }, (_, i) => 1_000 * s + i),
      values: Array.from({ length: 1 + (s % 7) }, (_, i) => Math.sin(s + i)),
    }));
    const decoded: DecodedPush = { series, rejected: [], rejectedPoints: 0, samples: 0, dropped: { staleMarkers: 0, stringFields: 0 } };
    const batch = { points: 50_000, bytes: BYTES };
    const { decision } = decideSeriesPush(decoded, user, { taskId: 't', at: 5, batch, pointsPartitions: 3, partitionOf, codec });
    const batcher = new PointBatcher(batch, Number.MAX_SAFE_INTEGER, (name) => partitionOf(name, 3));
    const expected = [];
    for (const s of series) for (let i = 0; i < s.timestamps.length; i++) expected.push(...batcher.add(s.name, s.timestamps[i]!, s.values[i]!));
    expected.push(...batcher.drain());
    expect(decision.batches.length).toBeGreaterThan(3);
    expect(decision.batches.map((b) => codec.decode(Buffer.from(b.value)))).toEqual(expected.map((b) => codec.decode(codec.encode(batchEvent(b)))));
    for (const b of decision.batches) expect(b.value.byteLength).toBeLessThanOrEqual(BYTES);
    expect(decision.points_accepted).toBe(series.reduce((n, s) => n + s.timestamps.length, 0));
  });
});

function batchEvent(b: { names: string[]; nameIndex: number[]; timestamps: number[]; values: number[] }): PointsFact {
  const names = b.names.length === 1 ? { metric_name: b.names[0]! } : { metric_name: '', names: b.names, name_index: b.nameIndex };
  return { type: 'PointBatch', task_id: 't', ...names, updated_at: 5, timestamps: b.timestamps, values: b.values };
}
