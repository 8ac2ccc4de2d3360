import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { partitionFor } from './partition.ts';

/** kafkajs' own choice for a keyed message: the producer's partitioner (createProducer), as it is called. */
function kafkajsPartition(key: string, partitions: number): number {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
    partitionErrorCode: 0,
  }));
  return partitioner({ topic: 'points', partitionMetadata, message: { key, value: null } });
}

describe('partitionFor', () => {
  it("is kafkajs' DefaultPartitioner's partition for every key length, multi-byte names and partition counts", () => {
    const keys = [
      '',
      'a',
      'ab',
      'abc',
      'abcd',
      'abcde',
      'cpu',
      'bench.download.m0000',
      'bench.download.m0999',
      'température.salle-1',
      '温度/センサー',
      '🙂emoji.metric',
      'x'.repeat(256),
      ...Array.from({ length: 2000 }, (_, i) => `metric.${i}.${'z'.repeat(i % 7)}`),
    ];
    for (const partitions of [1, 2, 3, 7, 12, 64]) {
      const differing = keys.filter((key) => partitionFor(key, partitions) !== kafkajsPartition(key, partitions));
      expect(differing, `partitions=${partitions}`).toEqual([]);
    }
  });

  it('spreads keys over every partition', () => {
    const seen = new Set(Array.from({ length: 300 }, (_, i) => partitionFor(`m${i}`, 3)));
    expect(seen).toEqual(new Set([0, 1, 2]));
  });
});
