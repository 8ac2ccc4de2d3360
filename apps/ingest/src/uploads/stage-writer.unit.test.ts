import { describe, expect, it } from 'vitest';
import type { PointBatch } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import type { Segment } from '@meridian/projection';
import { MOST_WAITING_PER_PARTITION, StageWriter, type UploadStage } from './stage-writer.ts';

const logger = createLogger({ name: 't', level: 'silent' });
const segment = (partition: number, offset: number, points: number): Segment => {
  const batch: PointBatch = {
    type: 'PointBatch',
    task_id: 't',
    metric_name: 'm',
    updated_at: 1,
    timestamps: Array.from({ length: points }, (_, i) => i),
    values: Array.from({ length: points }, () => 1),
    stage: 'aaaaaaaaaaaaaaaa',
  };
  return { batch, partition, offset };
};

/** A stage store that records each insert as "partition:offsets" and each drop, and refuses (or never answers) the ones asked. */
function fakeStage(refuse: (partition: number, call: number) => boolean = () => false, hang: (partition: number) => boolean = () => false) {
  const inserts: string[] = [];
  const dropped: string[] = [];
  const events: string[] = [];
  const givenUp: number[] = [];
  let calls = 0;
  let running = 0;
  let mostAtOnce = 0;
  const stage: UploadStage = {
    async open(taskId, attempt, partition) {
      events.push(`open ${taskId} ${attempt} ${partition}`);
      return {
        async insert(segments, signal) {
          running++;
          mostAtOnce = Math.max(mostAtOnce, running);
          if (hang(partition)) {
            // As a request ClickHouse never answers: only the writer's signal ends it.
            await new Promise((_, reject) =>
              signal!.addEventListener('abort', () => {
                givenUp.push(partition);
                reject(new Error('aborted'));
              }),
            );
          }
          await new Promise((r) => setImmediate(r));
          running--;
          if (refuse(partition, ++calls)) throw new Error('refused');
          inserts.push(`${partition}:${segments.map((s) => s.offset).join(',')}`);
        },
      };
    },
    async drop(taskId) {
      dropped.push(taskId);
      events.push(`drop ${taskId}`);
    },
  };
  return { stage, inserts, dropped, events, givenUp, mostAtOnce: () => mostAtOnce };
}

/**
 * A stage whose inserts the test ends: each waits until release() (oldest first) or releaseAll()
 * (which also stops holding the later ones), or until the writer gives it up; an insert is
 * recorded as "partition:offsets" once it has ended.
 */
function heldStage() {
  const inserts: string[] = [];
  const held: Array<() => void> = [];
  let holding = true;
  const stage: UploadStage = {
    async open(_taskId, _attempt, partition) {
      return {
        async insert(segments, signal) {
          if (holding) {
            await new Promise<void>((resolve, reject) => {
              held.push(resolve);
              signal?.addEventListener('abort', () => reject(new Error('aborted')));
            });
          }
          inserts.push(`${partition}:${segments.map((s) => s.offset).join(',')}`);
        },
      };
    },
    async drop() {},
  };
  const release = () => {
    const resolve = held.shift();
    if (resolve === undefined) throw new Error('no insert is held');
    resolve();
  };
  const releaseAll = () => {
    holding = false;
    for (const resolve of held.splice(0)) resolve();
  };
  return { stage, inserts, release, releaseAll };
}

const options = (attempt: string, batchRows: number, finishTimeoutMs = 60_000) => ({ taskId: 'task-1', attempt, batchRows, finishTimeoutMs });

describe('stage writer', () => {
  it('inserts whole batches per partition up to batchRows, one insert at a time, the rest at finish', async () => {
    const f = fakeStage();
    const w = new StageWriter(f.stage, options('aaaaaaaaaaaaaaaa', 10), logger);
    w.add([segment(0, 1, 6), segment(1, 1, 3), segment(0, 2, 4), segment(0, 3, 1)]);
    w.add([segment(1, 2, 20), segment(0, 4, 9)]);
    await w.finish();
    expect(f.inserts.sort()).toEqual(['0:1,2', '0:3,4', '1:1', '1:2'].sort());
    expect(f.mostAtOnce()).toBe(1);
    expect(w.brokenPartitions.size).toBe(0);
    // Each stage is opened (made, its defaults set) once, not per insert.
    expect(f.events.filter((e) => e.startsWith('open')).sort()).toEqual(['open task-1 aaaaaaaaaaaaaaaa 0', 'open task-1 aaaaaaaaaaaaaaaa 1']);
  });

  it("a failed insert breaks only its partition's stage: no retry, no more inserts there, never an error to the upload", async () => {
    const f = fakeStage((partition, call) => partition === 0 && call === 1);
    const w = new StageWriter(f.stage, options('aaaaaaaaaaaaaaaa', 5), logger);
    w.add([segment(0, 1, 5), segment(0, 2, 5), segment(1, 1, 5), segment(0, 3, 5)]);
    await w.finish();
    expect(f.inserts).toEqual(['1:1']);
    expect([...w.brokenPartitions]).toEqual([0]);
  });

  it("abandon waits for the insert in flight and drops the task's stages", async () => {
    const f = fakeStage();
    const w = new StageWriter(f.stage, options('bbbbbbbbbbbbbbbb', 1), logger);
    w.add([segment(0, 1, 2), segment(0, 2, 2)]);
    await w.abandon();
    expect(f.inserts).toEqual(['0:1']);
    expect(f.dropped).toEqual(['task-1', 'task-1']);
  });

  it("drops the stages of the task's earlier runs before its first insert", async () => {
    const f = fakeStage();
    const w = new StageWriter(f.stage, options('cccccccccccccccc', 10), logger);
    w.add([segment(2, 1, 20)]);
    await w.finish();
    expect(f.events).toEqual(['drop task-1', 'open task-1 cccccccccccccccc 2']);
    expect(f.inserts).toEqual(['2:1']);
  });

  it('finish gives up inserts that do not end within finishTimeoutMs: their partitions count as broken, the others are written', async () => {
    const f = fakeStage(
      () => false,
      (partition) => partition === 1,
    );
    const w = new StageWriter(f.stage, options('dddddddddddddddd', 5, 50), logger);
    // Queued: 0:1, then 1:1 (never answered), then at finish 0:2, 1:2, 2:1 behind it.
    w.add([segment(0, 1, 5), segment(0, 2, 5), segment(1, 1, 5), segment(1, 2, 5), segment(2, 1, 5)]);
    await w.finish();
    expect(f.inserts).toEqual(['0:1']);
    expect(f.givenUp).toEqual([1]);
    expect([...w.brokenPartitions].sort()).toEqual([0, 1, 2]);
    // Nothing given up is tried later.
    await new Promise((r) => setTimeout(r, 20));
    expect(f.inserts).toEqual(['0:1']);
  });
  it('room() holds the upload while a partition has writes piling up behind a slow ClickHouse, and lets it go once they drain: nothing given up', async () => {
    const { stage, inserts, releaseAll } = heldStage();
    const w = new StageWriter(stage, options('ffffffffffffffff', 5), logger);
    const turn = () => new Promise((r) => setImmediate(r));
    await w.room(); // nothing written yet: room at once
    for (let offset = 1; offset <= 3; offset++) w.add([segment(0, offset, 5)]); // 0:1 under way (held), 0:2 waits
    await turn();
    await w.room(); // one waiting: still room
    w.add([segment(0, 4, 5)]); // 0:3 waits too: crowded
    let roomy = false;
    const room = w.room().then(() => {
      roomy = true;
    });
    await turn();
    await turn();
    expect(roomy, 'room() waits while two writes wait behind a held insert').toBe(false);
    releaseAll();
    await room;
    expect(inserts[0]).toBe('0:1');
    await w.finish();
    expect(inserts).toEqual(['0:1', '0:2', '0:3', '0:4']);
    expect(w.brokenPartitions.size).toBe(0);
  });

  it('room() waits at most finishTimeoutMs: then every insert is given up and every stage, even one not written yet, counts as broken', async () => {
    const f = fakeStage(
      () => false,
      (partition) => partition === 0,
    );
    const w = new StageWriter(f.stage, options('abababababababab', 5, 50), logger);
    for (let offset = 1; offset <= 4; offset++) w.add([segment(0, offset, 5)]); // 0:1 never answered, 0:2 and 0:3 wait
    await new Promise((r) => setImmediate(r));
    const started = performance.now();
    await w.room();
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(f.givenUp).toEqual([0]);
    w.add([segment(1, 1, 5), segment(1, 2, 5)]);
    expect([...w.brokenPartitions].sort()).toEqual([0, 1]);
    await w.room(); // given up: no more waiting
    await w.finish();
    expect(f.inserts).toEqual([]);
  });

  it('room() waits at most finishTimeoutMs over all its calls, not each', async () => {
    const { stage, release } = heldStage();
    const w = new StageWriter(stage, options('cdcdcdcdcdcdcdcd', 5, 300), logger);
    const turn = () => new Promise((r) => setImmediate(r));
    let offset = 0;
    for (let k = 0; k < 4; k++) w.add([segment(0, ++offset, 5)]); // one under way, two waiting: crowded
    await turn();
    setTimeout(release, 150);
    await w.room(); // ~150 ms: an insert ended in time
    expect(w.brokenPartitions.size).toBe(0);
    w.add([segment(0, ++offset, 5)]); // crowded again
    await turn();
    // This insert would end within 300 ms of this call, but only ~150 are left of the 300.
    setTimeout(release, 250);
    await w.room();
    expect([...w.brokenPartitions]).toEqual([0]);
    await w.finish();
  });

  it("heartbeats the command's consumer while it holds the upload, waiting for room or for its last inserts", async () => {
    const { stage, release, releaseAll } = heldStage();
    let beats = 0;
    const w = new StageWriter(
      stage,
      {
        ...options('bcbcbcbcbcbcbcbc', 5),
        heartbeat: async () => {
          beats++;
        },
      },
      logger,
    );
    for (let offset = 1; offset <= 4; offset++) w.add([segment(0, offset, 5)]); // one under way, two waiting: crowded
    await new Promise((r) => setImmediate(r));
    setTimeout(release, 1200); // past a heartbeat interval
    await w.room();
    expect(beats, 'heartbeats while waiting for room').toBeGreaterThanOrEqual(1);
    const before = beats;
    setTimeout(releaseAll, 1200);
    await w.finish();
    expect(beats - before, 'heartbeats while waiting for the last inserts').toBeGreaterThanOrEqual(1);
    expect(w.brokenPartitions.size).toBe(0);
  });

  it('a partition whose writes pile up behind a slow ClickHouse is given up at once: broken, its waiting rows dropped, never inserted', async () => {
    // Slow, not refusing: partition 0's first insert (the others queue behind it) is answered only when the test says so.
    const { stage, inserts, releaseAll } = heldStage();
    const w = new StageWriter(stage, options('eeeeeeeeeeeeeeee', 5), logger);
    const turn = () => new Promise((r) => setImmediate(r));
    w.add([segment(0, 1, 5)]);
    w.add([segment(0, 2, 5)]); // 0:1 written (held by the server)
    await turn();
    let offset = 2;
    for (let k = 0; k < MOST_WAITING_PER_PARTITION; k++) {
      w.add([segment(0, ++offset, 5)]); // 0:2, 0:3, ... wait behind it
      await turn();
    }
    expect(w.brokenPartitions.size).toBe(0);
    w.add([segment(0, ++offset, 5), segment(1, 1, 5)]); // one more would wait too: partition 0 is given up
    expect([...w.brokenPartitions]).toEqual([0]);
    w.add([segment(0, ++offset, 5), segment(1, 2, 5)]);
    releaseAll();
    await w.finish();
    // Only the insert under way when it broke; partition 1 unharmed.
    expect(inserts).toEqual(['0:1', '1:1', '1:2']);
    expect([...w.brokenPartitions]).toEqual([0]);
  });
});
