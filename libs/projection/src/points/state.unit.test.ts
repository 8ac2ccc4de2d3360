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
    p.addSeal({ task_id: 't', partition: 0, offset: 5 }, 0);
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

  it('ages a seal alone in the buffer as it ages rows, so it is written once it has lingered', () => {
    const p = new Projection(100);
    p.setSinkMax(0, -1);
    expect(p.age(5_000)).toBe(0);
    p.addSeal({ task_id: 't', partition: 0, offset: 5 }, 1_000);
    expect(p.age(2_500)).toBe(1_500);
    p.dropStored();
    expect(p.age(2_500)).toBe(1_500);
    p.clearBuffer();
    expect(p.age(2_500)).toBe(0);
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

describe('projector state: staged uploads', () => {
  const attempt = '0123456789abcdef';
  const sealed = (stage: { attempt: string; first_offset: number; batches: number } | null, points = 30) => ({
    type: 'UploadSealed' as const,
    task_id: 'a',
    points,
    stage,
  });

  it('never buffers a staged batch: after the position it waits for its seal, at or below it it is done; the header alone says the same', () => {
    const p = new Projection(10);
    p.setSinkMax(0, 5);
    expect(p.decide(0, 6, { ...batch(2), stage: attempt })).toEqual({ kind: 'staged', attempt });
    expect(p.decide(0, 5, { ...batch(2), stage: attempt })).toMatchObject({ kind: 'skip' });
    expect(p.decideStaged(0, 6, attempt)).toEqual({ kind: 'staged', attempt });
    expect(p.decideStaged(0, 4, attempt)).toMatchObject({ kind: 'skip' });
    // A staged batch is not checked here: its seal's procedure reads and checks it.
    expect(p.decide(0, 7, { ...batch(2), values: [1], stage: attempt })).toEqual({ kind: 'staged', attempt });
    expect(p.decide(0, 7, { ...batch(2), stage: null })).toMatchObject({ kind: 'buffer' });
  });

  it("a staged seal after the position is a share to move in; at or below it (recorded) only its announcement and its stage's drop are repeated", () => {
    const p = new Projection(10);
    p.setSinkMax(1, 20);
    expect(p.decide(1, 40, sealed({ attempt, first_offset: 30, batches: 3 }))).toEqual({
      kind: 'stagedSeal',
      seal: { task_id: 'a', partition: 1, offset: 40, attempt, points: 30, batches: 3, firstOffset: 30 },
    });
    expect(p.decide(1, 20, sealed({ attempt, first_offset: 10, batches: 3 }))).toEqual({
      kind: 'seal',
      seal: { task_id: 'a', partition: 1, offset: 20 },
      leftStage: attempt,
    });
    expect(p.decide(1, 40, sealed(null))).toEqual({ kind: 'seal', seal: { task_id: 'a', partition: 1, offset: 40 } });
  });

  it('rejects a staged seal that cannot be (its batches not all before it, none, a bad attempt, negative points)', () => {
    const p = new Projection(10);
    p.setSinkMax(1, -1);
    for (const [stage, points] of [
      [{ attempt, first_offset: 38, batches: 3 }, 30],
      [{ attempt, first_offset: 30, batches: 0 }, 30],
      [{ attempt: 'ABC', first_offset: 30, batches: 3 }, 30],
      [{ attempt: `${attempt}0`, first_offset: 30, batches: 3 }, 30],
      [{ attempt, first_offset: -1, batches: 3 }, 30],
      [{ attempt, first_offset: 30, batches: 3 }, -1],
    ] as const)
      expect(p.decide(1, 40, sealed(stage, points)), JSON.stringify(stage)).toMatchObject({
        kind: 'reject',
        reason: expect.stringMatching(/staged seal that cannot be/),
      });
    expect(p.decide(1, 40, sealed({ attempt, first_offset: 37, batches: 3 }))).toMatchObject({ kind: 'stagedSeal' });
  });

  it("a sealed share moves the position to its seal, never back, and only once the partition's rows before it are flushed", () => {
    const p = new Projection(10);
    p.setSinkMax(1, 20);
    const share = { task_id: 'a', partition: 1, offset: 40, attempt, points: 30, batches: 3, firstOffset: 30 };
    p.add({ batch: batch(1), partition: 1, offset: 33 }, 0);
    expect(() => p.sealed(share)).toThrow(/still buffered/);
    p.clearBuffer();
    p.sealed(share);
    expect(p.sinkPosition(1)).toBe(40);
    expect(p.decide(1, 39, { ...batch(1), stage: attempt })).toMatchObject({ kind: 'skip' });
    p.setSinkMax(1, 50);
    p.sealed(share);
    expect(p.sinkPosition(1)).toBe(50);
  });
});

describe("a deletion's marker", () => {
  const marker = { type: 'PointsDeleted', task_id: 'd', metrics: ['m'], from_ms: 10, to_ms: 20, rollups: true } as const;

  it('is applied above the position, announced only at or below it (applied and recorded before)', () => {
    const p = new Projection(10);
    p.setSinkMax(0, 5);
    expect(p.decide(0, 7, marker)).toEqual({
      kind: 'delete',
      deletion: { task_id: 'd', partition: 0, offset: 7, metrics: ['m'], fromMs: 10, toMs: 20, rollups: true },
    });
    // Retention's marker (and every v1 marker) leaves the rollups alone.
    expect(p.decide(0, 9, { ...marker, rollups: false })).toMatchObject({ kind: 'delete', deletion: { rollups: false } });
    expect(p.decide(0, 5, marker)).toEqual({ kind: 'seal', seal: { task_id: 'd', partition: 0, offset: 5 } });
    expect(p.decide(0, 8, { ...marker, from_ms: 30 })).toMatchObject({ kind: 'reject' });
  });

  it("moves the position to its offset once applied, and only with its partition's rows flushed", () => {
    const p = new Projection(10);
    p.setSinkMax(0, 5);
    p.add({ batch: batch(2), partition: 0, offset: 6 }, 0);
    const deletion = { task_id: 'd', partition: 0, offset: 7, metrics: ['m'], fromMs: 10, toMs: 20, rollups: true };
    expect(() => p.deleted(deletion)).toThrow(/still buffered/);
    p.clearBuffer();
    p.deleted(deletion);
    expect(p.inSink(0, 7)).toBe(true);
  });
});
