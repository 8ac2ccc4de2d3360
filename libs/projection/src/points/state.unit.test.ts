import { describe, expect, it } from 'vitest';
import type { PointBatch } from '@meridian/domain';
import { Projection } from './state.ts';

const batch = (n: number, task_id = 't'): PointBatch => ({
  type: 'PointBatch',
  task_id,
  metric_name: 'm',
  updated_at: 1,
  timestamps: Array.from({ length: n }, (_, i) => i),
  values: Array.from({ length: n }, () => 1),
});

describe('projector state', () => {
  it('skips batches at or below the sink position and buffers the ones after it', () => {
    const p = new Projection(10);
    p.setSinkMax(0, 5);
    expect(p.decide(0, 5, batch(2))).toMatchObject({ kind: 'skip' });
    expect(p.decide(0, 6, batch(2))).toMatchObject({ kind: 'buffer', rows: 2, segment: { partition: 0, offset: 6 } });
    expect(() => p.decide(1, 0, batch(1))).toThrow(/not loaded/);
  });

  it('announces seals wherever they are, including below the sink position (a crash may have lost the first announcement)', () => {
    const p = new Projection(10);
    p.setSinkMax(2, 100);
    expect(p.decide(2, 50, { type: 'UploadSealed', task_id: 'a', points: 3 })).toEqual({ kind: 'seal', seal: { task_id: 'a', partition: 2, offset: 50 } });
    expect(p.decide(2, 150, { type: 'UploadSealed', task_id: 'a', points: 3 })).toMatchObject({ kind: 'seal' });
  });

  it('rejects malformed batches and other event types after the sink position, skips them below it', () => {
    const p = new Projection(10);
    p.setSinkMax(0, 3);
    expect(p.decide(0, 4, { ...batch(2), values: [1] })).toMatchObject({ kind: 'reject' });
    const other = { type: 'TaskStarted', task_id: 'x', at: 1 } as unknown as PointBatch;
    expect(p.decide(0, 4, other)).toMatchObject({ kind: 'reject', reason: expect.stringMatching(/unexpected event type TaskStarted/) });
    expect(p.decide(0, 2, other)).toMatchObject({ kind: 'skip' });
    expect(p.decide(0, 4, batch(0))).toMatchObject({ kind: 'skip' });
  });

  it('bounds an insert by batchRows, but never splits a batch', () => {
    const p = new Projection(10);
    p.setSinkMax(0, -1);
    expect(p.wouldOverflow(25)).toBe(false); // an empty buffer takes a batch larger than the limit, alone
    p.add({ batch: batch(6), partition: 0, offset: 0 }, 0);
    expect(p.wouldOverflow(4)).toBe(false);
    expect(p.wouldOverflow(5)).toBe(true);
    p.add({ batch: batch(4), partition: 0, offset: 1 }, 0);
    expect(p.isFull).toBe(true);
    expect(p.rows).toBe(10);
  });

  it('refuses to buffer a partition out of order', () => {
    const p = new Projection(10);
    p.add({ batch: batch(1), partition: 0, offset: 7 }, 0);
    expect(() => p.add({ batch: batch(1), partition: 0, offset: 7 }, 0)).toThrow(/out of order/);
    p.add({ batch: batch(1), partition: 1, offset: 3 }, 0);
  });

  it('advances the sink positions on a stored insert, and drops what the sink already holds after an unknown outcome', () => {
    const p = new Projection(100);
    p.setSinkMax(0, -1);
    p.setSinkMax(1, -1);
    const a = { batch: batch(3), partition: 0, offset: 4 };
    const b = { batch: batch(2), partition: 1, offset: 9 };
    p.add(a, 0);
    p.add(b, 0);
    p.addSeal({ task_id: 't', partition: 0, offset: 5 });
    // the insert failed, then the sink says it landed after all
    p.setSinkMax(0, 4);
    p.setSinkMax(1, 9);
    p.dropStored();
    expect(p.pending()).toMatchObject({ segments: [], rows: 0 });
    expect(p.hasSeals).toBe(true); // seals still to announce
    p.clearBuffer();
    p.stored([{ batch: batch(1), partition: 0, offset: 20 }]);
    expect(p.sinkPosition(0)).toBe(20);
    expect(p.isEmpty).toBe(true);
  });

  it('forgets positions and buffer on reset (a rebalance)', () => {
    const p = new Projection(10);
    p.setSinkMax(0, 1);
    p.add({ batch: batch(1), partition: 0, offset: 2 }, 1_000);
    expect(p.age(1_500)).toBe(500);
    p.reset();
    expect(p.knows(0)).toBe(false);
    expect(p.isEmpty).toBe(true);
    expect(p.age(9_999)).toBe(0);
  });
});
