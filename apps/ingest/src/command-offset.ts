import type { Transaction } from 'kafkajs';

/** Where a command sits in the tasks topic. */
export type CommandPosition = { readonly topic: string; readonly partition: number; readonly offset: number };

/** Moves the consumer group past the command, inside the transaction that writes its outcome. */
export async function commitCommandOffset(tx: Transaction, consumerGroupId: string, at: CommandPosition): Promise<void> {
  await tx.sendOffsets({ consumerGroupId, topics: [{ topic: at.topic, partitions: [{ partition: at.partition, offset: String(at.offset + 1) }] }] });
}
