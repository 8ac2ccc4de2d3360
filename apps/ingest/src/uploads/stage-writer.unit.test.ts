import { describe, expect, it } from 'vitest';
import type { PointBatch } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import type { Segment } from '@meridian/projection';
import { StageWriter, type UploadStage } from './stage-writer.ts';

const logger = createLogger({ name: 't', level: 'silent' });
const segment = (partition: number, offset: number, points: number): Segment => {
  const batch: PointBatch = { type: 'PointBatch', task_id: 't', metric_name: 'm', updated_at: 1, timestamps: Array.from({ length: points }, (_, i) => i), values: Array.from({ length: points }, () => 1), stage: 'aaaaaaaaaaaaaaaa' };
  return { batch, partition, offset };
};

/** A stage store that records each insert as "partition:offsets", and refuses the ones asked. */
function fakeStage(refuse: (partition: number, call: number) => boolean = () => false) {
  const inserts: string[] = [];
  const dropped: string[] = [];
  let calls = 0;
  let running = 0;
  let mostAtOnce = 0;
  const stage: UploadStage = {
    async open(_attempt, partition) {
      return {
        async insert(segments) {
          running++;
          mostAtOnce = Math.max(mostAtOnce, running);
          await new Promise((r) => setImmediate(r));
          running--;
          if (refuse(partition, ++calls)) throw new Error('refused');
          inserts.push(`${partition}:${segments.map((s) => s.offset).join(',')}`);
        },
      };
    },
    async drop(attempt) {
      dropped.push(attempt);
    },
  };
  return { stage, inserts, dropped, mostAtOnce: () => mostAtOnce };
}

describe('stage writer', () => {
  it('inserts whole batches per partition up to batchRows, one insert at a time, the rest at finish', async () => {
    const f = fakeStage();
    const w = new StageWriter(f.stage, 'aaaaaaaaaaaaaaaa', 10, logger);
    w.add([segment(0, 1, 6), segment(1, 1, 3), segment(0, 2, 4), segment(0, 3, 1)]);
    w.add([segment(1, 2, 20), segment(0, 4, 9)]);
    await w.finish();
    expect(f.inserts.sort()).toEqual(['0:1,2', '0:3,4', '1:1', '1:2'].sort());
    expect(f.mostAtOnce()).toBe(1);
    expect(w.brokenPartitions.size).toBe(0);
  });

  it('a failed insert breaks only its partition\'s stage: no retry, no more inserts there, never an error to the upload', async () => {
    const f = fakeStage((partition, call) => partition === 0 && call === 1);
    const w = new StageWriter(f.stage, 'aaaaaaaaaaaaaaaa', 5, logger);
    w.add([segment(0, 1, 5), segment(0, 2, 5), segment(1, 1, 5), segment(0, 3, 5)]);
    await w.finish();
    expect(f.inserts).toEqual(['1:1']);
    expect([...w.brokenPartitions]).toEqual([0]);
  });

  it('abandon waits for the insert in flight and drops the attempt\'s stages', async () => {
    const f = fakeStage();
    const w = new StageWriter(f.stage, 'bbbbbbbbbbbbbbbb', 1, logger);
    w.add([segment(0, 1, 2), segment(0, 2, 2)]);
    await w.abandon();
    expect(f.inserts).toEqual(['0:1']);
    expect(f.dropped).toEqual(['bbbbbbbbbbbbbbbb']);
  });
});
