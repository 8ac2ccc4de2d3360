import { describe, expect, it } from 'vitest';
import { pointsSegmentMs, replicationWarning, topicMismatches, topicSpecs, topicsFor } from './topics.ts';

const topics = topicsFor('t.');
const layout = { pointsPartitions: 6, tasksPartitions: 4, replicationFactor: 3, minInsyncReplicas: 2, pointsRetentionMs: 7 * 86_400_000 };

describe('topicSpecs', () => {
  it('gives every topic the replication of the layout, and the partitions of the layout to tasks and points only', () => {
    expect(topicSpecs(topics, layout)).toEqual([
      { topic: 't.accounts', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 },
      { topic: 't.tasks', partitions: 4, replicationFactor: 3, minInsyncReplicas: 2 },
      { topic: 't.points', partitions: 6, replicationFactor: 3, minInsyncReplicas: 2, segmentMs: 60_480_000 },
      { topic: 't.files', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 },
      { topic: 't.dead-letter', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 },
    ]);
  });
});

describe('topicMismatches', () => {
  const spec = topicSpecs(topics, layout)[1]!;

  it('finds none in a topic as specified, or with more partitions than asked', () => {
    expect(topicMismatches(spec, { partitions: 4, replicationFactor: 3, minInsyncReplicas: 2, segmentMs: 1 })).toEqual([]);
    expect(topicMismatches(spec, { partitions: 12, replicationFactor: 3, minInsyncReplicas: 2, segmentMs: 1 })).toEqual([]);
  });

  it('names fewer partitions, and a replication factor or min.insync.replicas either side of the spec', () => {
    expect(topicMismatches(spec, { partitions: 3, replicationFactor: 1, minInsyncReplicas: 1, segmentMs: 1 })).toEqual([
      { topic: 't.tasks', property: 'partitions', actual: 3, wanted: 4 },
      { topic: 't.tasks', property: 'replication factor', actual: 1, wanted: 3 },
      { topic: 't.tasks', property: 'min.insync.replicas', actual: 1, wanted: 2 },
    ]);
    expect(topicMismatches(spec, { partitions: 4, replicationFactor: 5, minInsyncReplicas: 3, segmentMs: 1 })).toEqual([
      { topic: 't.tasks', property: 'replication factor', actual: 5, wanted: 3 },
      { topic: 't.tasks', property: 'min.insync.replicas', actual: 3, wanted: 2 },
    ]);
  });
});

describe('the points segments', () => {
  it("are a tenth of the brokers' window, at least an hour", () => {
    expect(pointsSegmentMs(7 * 86_400_000)).toBe(60_480_000);
    expect(pointsSegmentMs(36_000_001)).toBe(3_600_000);
    expect(pointsSegmentMs(1000)).toBe(3_600_000);
  });

  it('of an existing points topic are compared with the spec; the other topics keep what they have', () => {
    const points = topicSpecs(topics, layout)[2]!;
    expect(topicMismatches(points, { partitions: 6, replicationFactor: 3, minInsyncReplicas: 2, segmentMs: 60_480_000 })).toEqual([]);
    expect(topicMismatches(points, { partitions: 6, replicationFactor: 3, minInsyncReplicas: 2, segmentMs: 604_800_000 })).toEqual([
      { topic: 't.points', property: 'segment.ms', actual: 604_800_000, wanted: 60_480_000 },
    ]);
  });
});

describe('replicationWarning', () => {
  it('is quiet on a single broker, and where the replication is as high as the brokers allow (up to 3)', () => {
    expect(replicationWarning(1, 1)).toBeNull();
    expect(replicationWarning(2, 2)).toBeNull();
    expect(replicationWarning(3, 3)).toBeNull();
    expect(replicationWarning(3, 9)).toBeNull();
  });

  it('warns when a cluster of several brokers gets topics with fewer replicas, naming the settings', () => {
    expect(replicationWarning(1, 3)).toMatch(
      /Kafka has 3 brokers but Meridian creates its topics with 1 replica\(s\).*KAFKA_REPLICATION_FACTOR=3 and KAFKA_MIN_INSYNC_REPLICAS=2/,
    );
    expect(replicationWarning(2, 5)).not.toBeNull();
    expect(replicationWarning(1, 2)).not.toBeNull();
  });
});
