import type { ConsumedPosition, LogTransaction, TransactionalLog } from '@meridian/domain';

// What the command handlers (uploads, file definitions) share to end a command in one transaction.

/** Where a command sits in the tasks topic. */
export type CommandPosition = ConsumedPosition;

/** Moves the consumer group past the command, inside the transaction that writes its outcome. */
export async function commitCommandOffset(tx: LogTransaction, consumerGroupId: string, at: CommandPosition): Promise<void> {
  await tx.commitConsumed(consumerGroupId, at);
}

/** Runs `work` in one transaction: committed when it returns, aborted when it throws. */
export async function inTransaction(producer: TransactionalLog, work: (tx: LogTransaction) => Promise<void>): Promise<void> {
  const tx = await producer.transaction();
  try {
    await work(tx);
    await tx.commit();
  } catch (error) {
    if (tx.isActive()) await tx.abort().catch(() => undefined);
    throw error;
  }
}
