import type { Transaction } from 'kafkajs';
import type { Transactions } from '@meridian/kafka';

// What the command handlers (uploads, file definitions) share to end a command in one transaction.

/** Where a command sits in the tasks topic. */
export type CommandPosition = { readonly topic: string; readonly partition: number; readonly offset: number };

/** Moves the consumer group past the command, inside the transaction that writes its outcome. */
export async function commitCommandOffset(tx: Transaction, consumerGroupId: string, at: CommandPosition): Promise<void> {
  await tx.sendOffsets({ consumerGroupId, topics: [{ topic: at.topic, partitions: [{ partition: at.partition, offset: String(at.offset + 1) }] }] });
}

/** Runs `work` in one transaction: committed when it returns, aborted when it throws. */
export async function inTransaction(producer: Transactions, work: (tx: Transaction) => Promise<void>): Promise<void> {
  const tx = await producer.transaction();
  try {
    await work(tx);
    await tx.commit();
  } catch (error) {
    if (tx.isActive()) await tx.abort().catch(() => undefined);
    throw error;
  }
}
