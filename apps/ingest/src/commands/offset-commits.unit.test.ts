import { describe, expect, it } from 'vitest';
import type { TopicOffsets } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { atOrPastFloors, OffsetCommits } from './offset-commits.ts';

const logger = createLogger({ name: 'test', level: 'silent' });
const INTERVAL_MS = 5;

/** kafkajs's shape: each partition a string, as uncommittedOffsets() reads them off an object's keys. */
const resolved = (offsets: Record<number, number>): TopicOffsets => ({
  topics: [{ topic: 't', partitions: Object.entries(offsets).map(([partition, offset]) => ({ partition, offset: String(offset) })) }],
});

/** A batch's commit controls over resolved offsets; each commit stays on its way until it is answered. */
function consumer(offsets: Record<number, number>) {
  const sent: TopicOffsets[] = [];
  const answers: Array<() => void> = [];
  return {
    offsets,
    sent,
    answer: () => answers.shift()?.(),
    payload: {
      uncommittedOffsets: () => resolved(offsets),
      commitOffsetsIfNecessary: (o?: TopicOffsets) => {
        sent.push(o!);
        return new Promise<void>((resolve) => answers.push(resolve));
      },
    },
  };
}

const until = async (what: () => boolean) => {
  while (!what()) await new Promise((r) => setTimeout(r, 1));
};

describe('the offsets committed beside the commands', () => {
  it('leave out a partition resolved short of the offset its last run committed', () => {
    const floors = new Map([
      [0, 10],
      [2, 7],
    ]);
    expect(atOrPastFloors(resolved({ 0: 9, 1: 3, 2: 7 }), floors)).toEqual(resolved({ 1: 3, 2: 7 }));
    expect(atOrPastFloors(resolved({ 0: 9 }), floors)).toEqual({ topics: [] });
  });

  it('never commit a claimed partition short of its run, and commit it again once it is resolved past', async () => {
    const c = consumer({ 0: 4, 1: 8 });
    const commits = new OffsetCommits(INTERVAL_MS, logger);
    await commits.claim(0, 6); // a run of the command at 5, its transaction committing 6
    commits.soon(c.payload);
    await until(() => c.sent.length === 1);
    expect(c.sent[0]).toEqual(resolved({ 1: 8 }));
    c.answer();
    c.offsets[0] = 6; // the run ended and its offset was resolved
    commits.soon(c.payload);
    await until(() => c.sent.length === 2);
    expect(c.sent[1]).toEqual(resolved({ 0: 6, 1: 8 }));
    c.answer();
    commits.stop();
  });

  it('start a run only once a commit read before its claim has its answer', async () => {
    const c = consumer({ 0: 5 });
    const commits = new OffsetCommits(INTERVAL_MS, logger);
    commits.soon(c.payload);
    await until(() => c.sent.length === 1);
    let claimed = false;
    const claim = commits.claim(0, 6).then(() => (claimed = true));
    await new Promise((r) => setTimeout(r, 4 * INTERVAL_MS));
    expect(claimed).toBe(false); // that commit of 5 could land after the run's transaction committed 6
    c.answer();
    await claim;
    expect(claimed).toBe(true);
    commits.stop();
  });

  it('keep at most one commit on its way: one due meanwhile waits for its answer, and reads the offsets afresh', async () => {
    const c = consumer({ 0: 5 });
    const commits = new OffsetCommits(INTERVAL_MS, logger);
    commits.soon(c.payload);
    await until(() => c.sent.length === 1);
    c.offsets[0] = 7;
    commits.soon(c.payload);
    await new Promise((r) => setTimeout(r, 6 * INTERVAL_MS));
    expect(c.sent).toHaveLength(1);
    c.answer();
    await until(() => c.sent.length === 2);
    expect(c.sent[1]).toEqual(resolved({ 0: 7 }));
    c.answer();
    commits.stop();
  });

  it('let a run start when reading the offsets to commit threw', async () => {
    const commits = new OffsetCommits(INTERVAL_MS, logger);
    let read = false;
    commits.soon({
      uncommittedOffsets: () => {
        read = true;
        throw new Error('the group is rebalancing');
      },
      commitOffsetsIfNecessary: () => Promise.resolve(),
    });
    await until(() => read);
    await expect(commits.claim(0, 1)).resolves.toBeUndefined();
    commits.stop();
  });

  it('start no commit once stopped', async () => {
    const c = consumer({ 0: 5 });
    const commits = new OffsetCommits(INTERVAL_MS, logger);
    commits.soon(c.payload);
    commits.stop();
    commits.soon(c.payload);
    await new Promise((r) => setTimeout(r, 4 * INTERVAL_MS));
    expect(c.sent).toEqual([]);
  });
});
